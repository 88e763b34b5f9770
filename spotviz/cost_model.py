"""What a target pass costs on the hardware that measured it, in standard passes: the model behind every wall-clock
ceiling the tool prints (the bench's rows, the app's headline).

A cost curve is a list of measured points [[N, f(N)]]: f(N) is the time of one target forward over N states of one
window (samplers/forward_cost.py measures it). Between points f is linear; below the first point it is the first
point's value; above the last it goes on along the last segment. A *fused* pass evaluates the window and the next
one (both decoders make one per window); its curve f2, where measured, prices it, else f does.

    cost(pass)  = f(N) / f(1)            (f2(N) / f(1) for a fused pass)
    cost(run)   = sum of cost(pass) over its passes
    ceiling     = cost(standard decoder's run) / cost(run)

The ceiling is the wall-clock ratio a run would reach if drafting, tree building and bookkeeping cost nothing: for
exact decoding with r commits per pass over N states, r / (f(N) / f(1)). Plain Python (no numpy, no torch), so
that the views can price a trace with it too.

Observed. A curve measured apart is a prediction; inside decodes a forward can cost a little more or less (the
context is longer or shorter than the curve's; on session 49's AMD machine, in decodes of 32 tokens, the standard
decoder's forwards ran 13% above the curve's f(1) and 8-state forwards 3%, so a curve-priced ceiling sat below the
measured ratio in every bench row; at 128 tokens it sat 4-5% above). Where a run's passes carry the wall time of
their forwards (PassRecord.forward_s), the ceiling is priced with those instead:

    observed ceiling = W_std / (F_run + P_run * (W_std - F_std) / P_std)

W the standard run's wall time, F the sums of forward times, P the pass counts: the run's passes at the time of
their own forwards plus a standard pass's own work each (its decision and bookkeeping, which every pass needs),
i.e. the run's ratio if drafting cost nothing. It is measured, so it carries the timing noise of one run. Per pass:

    observed pass cost = max(1, (F_run / P_run + (W_std - F_std) / P_std) / (W_std / P_std))
    observed ceiling   = (P_std / P_run) / observed pass cost

what a pass of the run costs in standard passes, its drafting left out, and never less than one (a pass computes
at least the state a standard pass does: less is the timing's noise); the ceiling is the pass reduction over it (the
app's headline says both, so its figures divide into each other).
"""
from __future__ import annotations


def _points(curve) -> list[tuple[float, float]]:
    return sorted((float(a), float(b)) for a, b in curve)


def _f(pts, n: float) -> float:
    """f(n) from sorted points (at least one)."""
    if n <= pts[0][0] or len(pts) == 1:
        return pts[0][1]
    if n >= pts[-1][0]:
        (x0, y0), (x1, y1) = pts[-2], pts[-1]
    else:
        i = next(i for i in range(1, len(pts)) if pts[i][0] >= n)
        (x0, y0), (x1, y1) = pts[i - 1], pts[i]
    return y0 + (y1 - y0) * (n - x0) / (x1 - x0) if x1 != x0 else y1


def f_at(curve, n: float) -> float:
    """f(n) from the points [[N, seconds], ...] of `curve` (any order; at least one point)."""
    return _f(_points(curve), n)


def pass_cost(passes, curve, fused_curve=None) -> float:
    """The passes (records with `.states` and `.two_windows`) in standard passes of time with no overhead."""
    one, fused = _points(curve), _points(fused_curve or curve)  # (sorted once, not per pass)
    return sum(_f(fused if p.two_windows else one, max(p.states, 1)) for p in passes) / _f(one, 1)


def ceiling(standard_passes, passes, curve, fused_curve=None) -> float:
    """The zero-overhead wall-clock ratio of a run (its pass records) against the standard decoder's run."""
    return pass_cost(standard_passes, curve, fused_curve) / max(pass_cost(passes, curve, fused_curve), 1e-9)


def observed_pass_cost(standard_passes, passes) -> float | None:
    """A pass of the run in standard passes, priced with the runs' own forward times (module docstring): its mean
    forward plus a standard pass's own work, over a standard pass's mean time; None where a pass has no forward time
    recorded (a trace of an earlier version) or nothing was timed."""
    std, run = list(standard_passes), list(passes)
    if not std or not run or any(p.forward_s <= 0 for p in std + run):
        return None
    w_all = sum(p.wall_s for p in std)
    own = max(w_all - sum(p.forward_s for p in std), 0.0) / len(std)
    spent = sum(p.forward_s for p in run) / len(run) + own
    # (at least one: a pass computes at least the one state a standard pass does; below that is timing noise, which
    # gave a bench row of two prompts that saved no pass a ceiling of 1.57x)
    return max(1.0, spent / (w_all / len(std))) if w_all > 0 else None


def observed_ceiling(standard_passes, passes, standard_runs: int = 1) -> float | None:
    """The zero-overhead ratio priced with the runs' own forward times (module docstring): the pass reduction over
    observed_pass_cost; None where a pass has none recorded (a trace of an earlier version) or nothing was timed.
    `standard_runs`: how many standard runs of the same prompts `standard_passes` holds (the bench times one before
    and one after each run: their mean)."""
    std, run = list(standard_passes), list(passes)
    cost = observed_pass_cost(std, run)
    return len(std) / standard_runs / len(run) / cost if cost else None
