"""L-BFGS, as torch.optim.LBFGS: Nocedal, "Updating Quasi-Newton Matrices with Limited
Storage", Math. Comp. 1980; the strong-Wolfe line search of Nocedal & Wright, "Numerical
Optimization" (2nd ed., algorithms 3.5 and 3.6), with cubic interpolation.

All parameters are handled as one flat vector; the curvature pairs (s, y) of the last
`history_size` iterations give the search direction by the two-loop recursion. Each `step`
runs up to `max_iter` iterations and needs a `closure` that re-evaluates the loss and the
gradients.
"""

from __future__ import annotations

import math

from dlfree import as_tensor, enable_grad, no_grad

from ._foreach import add_to_param_
from .optimizer import Optimizer

_LINE_SEARCHES = (None, "strong_wolfe")


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """The minimiser, clamped to `bounds` (default: between the points), of the cubic
    through (x1, f1) and (x2, f2) with slopes g1, g2; the bounds' middle when it has none."""
    low, high = bounds if bounds is not None else sorted((x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    discriminant = d1 * d1 - g1 * g2
    if discriminant < 0:
        return (low + high) / 2
    d2 = math.sqrt(discriminant)
    if x1 <= x2:
        t = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        t = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(t, low), high)


class _Point:
    """A trial step length with its loss, flat gradient and directional derivative."""

    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """A step length along `d` meeting the strong Wolfe conditions (sufficient decrease
    with c1, curvature with c2): bracket it, then zoom in. Returns (loss, gradient, t,
    evaluations)."""
    xp_dot = d.dot
    d_norm = float(abs(d).max())
    start = _Point(0.0, f, g.copy(), gtd)
    f_new, g_new = evaluate(t)
    evals = 1
    trial = _Point(t, f_new, g_new, float(xp_dot(g_new)))
    previous = start
    bracket: list[_Point] | None = None
    done = False
    iterations = 0
    while iterations < max_ls:
        if trial.f > f + c1 * trial.t * gtd or (iterations > 1 and trial.f >= previous.f):
            bracket = [previous, _Point(trial.t, trial.f, trial.g.copy(), trial.gtd)]
            break
        if abs(trial.gtd) <= -c2 * gtd:
            bracket, done = [trial], True
            break
        if trial.gtd >= 0:
            bracket = [previous, _Point(trial.t, trial.f, trial.g.copy(), trial.gtd)]
            break
        lower = trial.t + 0.01 * (trial.t - previous.t)
        t_next = _cubic_minimum(previous.t, previous.f, previous.gtd, trial.t, trial.f,
                                trial.gtd, bounds=(lower, trial.t * 10))
        previous = _Point(trial.t, trial.f, trial.g.copy(), trial.gtd)
        f_new, g_new = evaluate(t_next)
        evals += 1
        trial = _Point(t_next, f_new, g_new, float(xp_dot(g_new)))
        iterations += 1
    if iterations == max_ls:
        bracket = [start, trial]
    assert bracket is not None
    if len(bracket) == 1:
        return bracket[0].f, bracket[0].g, bracket[0].t, evals

    # zoom: shrink [low, high] until a point satisfies both conditions
    stalled = False
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    while not done and iterations < max_ls:
        a, b = bracket
        if abs(b.t - a.t) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
        top, bottom = max(a.t, b.t), min(a.t, b.t)
        margin = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < margin:  # too near an end: move inside, or note it
            if stalled or t >= top or t <= bottom:
                t = top - margin if abs(t - top) < abs(t - bottom) else bottom + margin
                stalled = False
            else:
                stalled = True
        else:
            stalled = False
        f_new, g_new = evaluate(t)
        evals += 1
        iterations += 1
        point = _Point(t, f_new, g_new, float(xp_dot(g_new)))
        if point.f > f + c1 * t * gtd or point.f >= bracket[low].f:
            bracket[high] = _Point(t, point.f, point.g.copy(), point.gtd)
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(point.gtd) <= -c2 * gtd:
                done = True
            elif point.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = _Point(t, point.f, point.g.copy(), point.gtd)
    best = bracket[low]
    return best.f, best.g, best.t, evals


class LBFGS(Optimizer):
    """Limited-memory BFGS over all parameters as one vector (one param group only).

    `step(closure)` runs at most `max_iter` iterations and `max_eval` closure calls
    (default max_iter * 5 // 4), stopping early when the largest gradient entry is at most
    `tolerance_grad`, or the step or the loss change is below `tolerance_change`.
    `line_search_fn` is None (a fixed step `lr`; the first iteration of a run scaled by the
    gradient's 1-norm) or "strong_wolfe". Memory: 2 * history_size flat vectors.
    """

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
                 history_size: int = 100, line_search_fn: str | None = None):
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS: supports one param group only (it treats all parameters "
                             f"as one vector), got {len(self.param_groups)}")

    def _validate(self, group: dict) -> None:
        self._check_nonnegative(group, "lr", "tolerance_grad", "tolerance_change")
        for name in ("max_iter", "max_eval", "history_size"):
            value = group[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"LBFGS: {name} must be an int >= 1, got {value!r}")
        if group["line_search_fn"] not in _LINE_SEARCHES:
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got "
                             f"{group['line_search_fn']!r}")

    def _check_state_shape(self, key, value, p, index) -> None:
        """Its state is flat vectors over all parameters, not shaped like one."""

    # ------------------------------------------------------------ flat-vector views
    @property
    def _params(self) -> list:
        return self.param_groups[0]["params"]

    def _flat_grad(self):
        params = self._params
        xp = params[0].device.xp
        return xp.concatenate([
            (p.grad.array if p.grad is not None else xp.zeros(p.shape, p.array.dtype))
            .reshape(-1) for p in params])

    def _move(self, t: float, d) -> None:
        offset = 0
        for p in self._params:
            n = p.numel()
            add_to_param_(p, d[offset:offset + n].reshape(p.shape), t)
            offset += n

    def _evaluate(self, closure) -> float:
        with enable_grad():
            return float(closure())

    def _directional(self, closure, d, start: list):
        """f and the gradient at start + t * d, leaving the parameters at `start`."""
        def evaluate(t):
            self._move(t, d)
            loss = self._evaluate(closure)
            grad = self._flat_grad()
            for p, saved in zip(self._params, start):
                p.copy_(saved)
            return loss, grad
        return evaluate

    # ----------------------------------------------------------------------- step
    @no_grad()
    def step(self, closure=None):
        """Run up to `max_iter` iterations; returns the loss `closure` gave first."""
        if closure is None:
            raise ValueError("LBFGS.step needs a closure that clears the gradients, computes "
                             "the loss, calls backward and returns the loss")
        group = self.param_groups[0]
        lr, history = group["lr"], group["history_size"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            first_loss = closure()
        loss = float(first_loss)
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if float(abs(flat_grad).max()) <= tol_grad:
            return first_loss

        d = _array(state.get("d"))
        t = state.get("t")
        old_dirs = [_array(v) for v in state.get("old_dirs", [])]
        old_steps = [_array(v) for v in state.get("old_stps", [])]
        ro = list(state.get("ro", []))
        h_diag = state.get("H_diag", 1.0)
        prev_grad = _array(state.get("prev_flat_grad"))
        prev_loss = state.get("prev_loss")

        iteration = 0
        while iteration < group["max_iter"]:
            iteration += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d, old_dirs, old_steps, ro, h_diag = -flat_grad, [], [], [], 1.0
            else:
                y = flat_grad - prev_grad
                s = d * t
                ys = float(y.dot(s))
                if ys > 1e-10:  # keep the pair only where curvature is positive
                    if len(old_dirs) == history:
                        old_dirs.pop(0), old_steps.pop(0), ro.pop(0)
                    old_dirs.append(y)
                    old_steps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / float(y.dot(y))
                d = self._two_loop(flat_grad, old_dirs, old_steps, ro, h_diag)
            prev_grad = flat_grad.copy()
            prev_loss = loss
            # the first step of a run is scaled to the gradient: no curvature is known yet
            t = min(1.0, 1.0 / float(abs(flat_grad).sum())) * lr if state["n_iter"] == 1 else lr
            gtd = float(flat_grad.dot(d))
            if gtd > -tol_change:  # not a descent direction any more
                break

            if group["line_search_fn"] == "strong_wolfe":
                start = [p.clone() for p in self._params]
                loss, flat_grad, t, used = _strong_wolfe(
                    self._directional(closure, d, start), t, d, loss, flat_grad, gtd)
                self._move(t, d)
            else:
                self._move(t, d)
                used = 0
                if iteration != group["max_iter"]:
                    loss = self._evaluate(closure)
                    flat_grad = self._flat_grad()
                    used = 1
            evals += used
            state["func_evals"] += used

            if iteration == group["max_iter"] or evals >= group["max_eval"]:
                break
            if float(abs(flat_grad).max()) <= tol_grad:
                break
            if float(abs(d * t).max()) <= tol_change or abs(loss - prev_loss) < tol_change:
                break

        state.update(d=as_tensor(d), t=t, old_dirs=[as_tensor(v) for v in old_dirs],
                     old_stps=[as_tensor(v) for v in old_steps], ro=ro, H_diag=h_diag,
                     prev_flat_grad=as_tensor(prev_grad), prev_loss=prev_loss)
        return first_loss

    @staticmethod
    def _two_loop(flat_grad, old_dirs, old_steps, ro, h_diag):
        """The direction -H g, H the inverse-Hessian estimate of the stored pairs."""
        q = -flat_grad
        alphas = [0.0] * len(old_dirs)
        for i in range(len(old_dirs) - 1, -1, -1):
            alphas[i] = float(old_steps[i].dot(q)) * ro[i]
            q = q - alphas[i] * old_dirs[i]
        r = q * h_diag
        for i in range(len(old_dirs)):
            beta = float(old_dirs[i].dot(r)) * ro[i]
            r = r + (alphas[i] - beta) * old_steps[i]
        return r


def _array(value):
    """A state tensor's array (state holds Tensors, so state_dict copies them)."""
    return None if value is None else value.array
