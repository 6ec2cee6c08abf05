"""Adam's and AdamW's update as one numba loop over a parameter's elements: the NumPy
path (`adam.Adam._update`) makes about a dozen passes over the parameter, its gradient and
both moments, each through memory for a large layer; this makes one. Each element goes
through the same float operations in the same order as there, in the parameter's dtype
(numba compiles it without contraction or reassociation), so the two paths agree bit for
bit. Imported only where `dlfree.backends.numba_kernels.kernels()` says numba is on.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(error_model="numpy", nogil=True, cache=True)
def adam_update(p, g, m, v, v_max, decay, weight_decay, maximize, near, lerp_weight,
                far_weight, beta2, square_weight, eps, alpha, amsgrad, lo, hi):
    """Elements lo:hi of the flat arrays: `p` shrunk by `decay` (AdamW's decoupled decay;
    1 for none), the gradient `g` (negated with `maximize`, plus `weight_decay` · p as an
    L2 term where it is not 0), the first moment `m` moved towards it by `lerp_weight`
    (from m's end where `near`, else from g's by `far_weight`, 1 - lerp_weight: torch's
    lerp), the second `v` decayed by `beta2` plus `square_weight` · g² (`v_max` its running
    maximum with `amsgrad`), and p += alpha · m / (sqrt(v) + eps). Every float scalar
    comes in the arrays' dtype. The loop runs over slices from index 0, which numba knows
    are not negative: indexing from `lo` keeps a wraparound check that stops LLVM from
    vectorising it (4.6x slower)."""
    p, g, m, v, v_max = p[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi], v_max[lo:hi]
    for i in range(hi - lo):
        param = p[i]
        if decay != 1:
            param = param * decay
        grad = g[i]
        if weight_decay != 0:
            grad = param * weight_decay - grad if maximize else param * weight_decay + grad
        elif maximize:
            grad = -grad
        step = grad - m[i]
        first = m[i] + step * lerp_weight if near else grad - step * far_weight
        second = v[i] * beta2 + (grad * grad if square_weight == 1 else
                                 grad * square_weight * grad)
        m[i], v[i] = first, second
        if amsgrad:
            if not (v_max[i] >= second or v_max[i] != v_max[i]):  # NaN wins, as np.maximum
                v_max[i] = second
            second = v_max[i]
        update = first / (np.sqrt(second) + eps)
        p[i] = param - update if alpha == -1 else param + update * alpha
