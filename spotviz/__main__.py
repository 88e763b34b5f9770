from .cli import exit_with, main

if __name__ == "__main__":  # (worker processes that import this module run nothing)
    exit_with(main())
