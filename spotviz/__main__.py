from .cli import main

if __name__ == "__main__":  # (worker processes that import this module run nothing)
    raise SystemExit(main())
