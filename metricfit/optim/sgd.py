"""Momentum SGD with early stopping over an ``f(x) -> (J, G)`` callable (seed 004, 4.1, Alg. 1)."""

import numpy as np
from scipy.optimize import OptimizeResult
from sklearn.utils import check_random_state

_MESSAGES = {
    0: "validation score stopped improving",
    1: "maximum number of iterations reached",
    2: "non-finite cost, gradient or parameters",
    3: "mini-batch gradient norm below tol",
}


def _check_options(learning_rate, momentum, batch_size, check_every, n_iter_no_change, max_iter):
    if not learning_rate > 0:
        raise ValueError(f"learning_rate must be > 0, got {learning_rate}.")
    if not 0 <= momentum < 1:
        raise ValueError(f"momentum must be in [0, 1), got {momentum}.")
    for name, value in [("batch_size", batch_size), ("check_every", check_every)]:
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value}.")
    if n_iter_no_change is not None and (int(n_iter_no_change) != n_iter_no_change
                                         or n_iter_no_change < 1):
        raise ValueError(f"n_iter_no_change must be an int >= 1 or None, got {n_iter_no_change}.")
    if int(max_iter) != max_iter or max_iter < 0:
        raise ValueError(f"max_iter must be an int >= 0, got {max_iter}.")


def steps_per_epoch(n_pairs, batch_size):
    """Mini-batch steps of one epoch, one pass over ``n_pairs`` pairs: ``ceil(n / batch)``.

    Examples
    --------
    >>> from metricfit.optim.sgd import steps_per_epoch
    >>> steps_per_epoch(100, 32)
    4
    """
    return -(-int(n_pairs) // int(batch_size))


def _batch_sampler(fun, batch_size, rng):
    """``draw() -> indices`` of a balanced mini-batch; None when ``fun`` has no batch protocol."""
    if not all(hasattr(fun, name) for name in ("batch", "labels", "n_pairs")):
        return None
    labels = np.asarray(fun.labels).ravel()  # (n_pairs,)
    classes = [idx for idx in (np.flatnonzero(labels > 0), np.flatnonzero(labels < 0)) if idx.size]
    if not classes:
        raise ValueError("the objective has no labelled pairs to sample from.")
    sizes = [batch_size - batch_size // 2, batch_size // 2] if len(classes) == 2 else [batch_size]

    def draw():
        return np.concatenate([rng.choice(idx, size=m, replace=m > idx.size)
                               for idx, m in zip(classes, sizes, strict=True)])

    return draw


def minimize_sgd(fun, x0, *, max_iter=10000, tol=0.0, callback=None, random_state=None,
                 learning_rate=1e-3, momentum=0.99, batch_size=2, validation=None,
                 check_every=100, n_iter_no_change=20, train_score=None, restore_best=True,
                 in_epochs=False):
    r"""Minimise ``fun`` by stochastic gradient descent with momentum and early stopping.

    Each step t draws a mini-batch, evaluates its cost J_t and gradient g_t at x_{t-1}, and
    updates::

        v_t = momentum * v_{t-1} + g_t,    v_0 = 0
        x_t = x_{t-1} - learning_rate * v_t

    This is Algorithm 1 of seed 004 with the sign corrected: the paper prints
    ``W_t <- W_{t-1} + alpha dW_t``, which *ascends* the cost; descent subtracts.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (J, G)`` for a flat vector x (float32 J, G accepted; the solver works in
        float64). If ``fun`` also follows the batch protocol of
        :class:`metricfit.losses._linear.PreparedObjective` (``n_pairs``, ``labels`` in
        {-1, +1} and ``batch(x, indices) -> (J, G)``), each step uses a mini-batch;
        otherwise each step uses the full gradient ``fun(x)``.
    x0 : array-like
        Start point (flattened, copied to float64).
    max_iter : int, default=10000
        Maximum number of steps (Algorithm 1's P_t).
    tol : float, default=0.0
        When > 0, stop (converged, ``status=0``) as soon as the gradient of the current
        mini-batch has Euclidean norm below ``tol``. With mini-batches this is a noisy
        test; 0 disables it.
    callback : callable, default=None
        ``callback(x, J, n_iter)`` at every check after a step (not at the step-0 check of
        the start), with x the current iterate, J the cost of the last mini-batch (evaluated
        before the step that produced x) and n_iter the number of steps so far.
    random_state : int, RandomState, Generator or None, default=None
        Seeds the mini-batch draws; a fixed seed reproduces the run bit for bit.
    learning_rate : float, default=1e-3
        Step size alpha.
    momentum : float, default=0.99
        lambda in [0, 1), the weight of the previous update (seed 004 uses 0.99).
    batch_size : int, default=2
        Pairs per mini-batch, half similar and half dissimilar (the similar half gets the
        extra pair when odd); 2 is Algorithm 1's one similar and one dissimilar pair. When
        the labels hold one class only, all pairs are drawn from it. Draws are without
        replacement within a batch unless a class has fewer pairs than requested.
    validation : callable, default=None
        ``validation(x) -> float``, higher is better (e.g. verification accuracy on held-out
        pairs). Evaluated at every check; the best x is kept and returned.
    check_every : int, default=100
        Check at the start (step 0), every this many steps (Algorithm 1's F_t) and once more
        at the end unless the run stopped on a non-finite value.
    n_iter_no_change : int or None, default=20
        With ``validation``, stop after this many consecutive checks without a strict
        improvement of the best score. None disables early stopping.
    train_score : callable, default=None
        ``train_score(x) -> float`` recorded at every check (learning curves).
    restore_best : bool, default=True
        With ``validation``, return the best-validation iterate; False: the last finite one
        (validation then only draws its curve and, with ``n_iter_no_change``, stops the run).
    in_epochs : bool, default=False
        True: ``max_iter`` and ``check_every`` count epochs, passes over the ``fun.n_pairs``
        pairs of the batch protocol (:func:`steps_per_epoch` steps each), and the result
        also holds ``n_epochs`` and ``best_epoch`` (``nit`` and ``best_step`` in epochs).

    Returns
    -------
    result : scipy.optimize.OptimizeResult
        ``x`` (the best-validation iterate if ``validation`` is given and ``restore_best``,
        else the last finite one), ``fun`` and ``jac`` (the full objective ``fun(x)``),
        ``nit`` (steps taken), ``nfev`` (calls of ``fun`` or ``fun.batch``), ``status`` (0
        early-stopped or converged, 1 ``max_iter`` reached, 2 non-finite
        cost/gradient/parameters),
        ``success`` (``status == 0``), ``message``, ``curves`` (dict of lists ``step``,
        ``validation``, ``train``; a list stays empty when its callable is not given) and
        ``best_step`` (the step of the returned x); with ``in_epochs``, ``n_epochs`` and
        ``best_epoch``.

    References
    ----------
    - Zheng, Duffner, Idrissi, Garcia and Baskurt, "Pairwise Identity Verification via Linear
      Concentrative Metric Learning", IEEE Transactions on Cybernetics, 2018 (seed 004).
    """
    _check_options(learning_rate, momentum, batch_size, check_every, n_iter_no_change, max_iter)
    steps = steps_per_epoch(fun.n_pairs, batch_size) if in_epochs else 1
    max_iter, check_every = max_iter * steps, check_every * steps
    if not isinstance(random_state, np.random.Generator):
        random_state = check_random_state(random_state)
    draw = _batch_sampler(fun, int(batch_size), random_state)
    x = np.array(x0, dtype=np.float64).ravel()  # (n_params,)
    if not np.isfinite(x).all():
        raise ValueError("x0 contains NaN or infinity.")
    velocity = np.zeros_like(x)  # (n_params,)
    curves = {"step": [], "validation": [], "train": []}
    best = {"score": -np.inf, "x": x.copy(), "step": 0, "stale": 0}
    J, nfev, nit, status = np.nan, 0, 0, 1

    def check():
        curves["step"].append(nit)
        if train_score is not None:
            curves["train"].append(float(train_score(x)))
        if callback is not None and nit > 0:
            callback(x, J, nit)
        if validation is None:
            return False
        score = float(validation(x))
        curves["validation"].append(score)
        if score > best["score"]:
            best.update(score=score, x=x.copy(), step=nit, stale=0)
        else:
            best["stale"] += 1
        return n_iter_no_change is not None and best["stale"] >= n_iter_no_change

    stop = check()  # step 0: the start is a candidate too, so SGD never returns worse
    last_check = 0
    while nit < max_iter and not stop:
        J_t, G = fun.batch(x, draw()) if draw is not None else fun(x)
        nfev += 1
        J_t, G = float(J_t), np.asarray(G, dtype=np.float64).ravel()  # (n_params,)
        if not (np.isfinite(J_t) and np.isfinite(G).all()):
            status = 2
            break
        J = J_t
        if tol > 0 and np.linalg.norm(G) < tol:
            status = 3
            break
        velocity = momentum * velocity + G
        x_new = x - learning_rate * velocity  # descent (Algorithm 1 prints +: ascent)
        if not np.isfinite(x_new).all():
            status = 2
            break
        x, nit = x_new, nit + 1
        if nit % check_every == 0:
            last_check = nit
            stop = check()
    if stop:
        status = 0
    if last_check != nit and status != 2:  # a diverged last iterate is not a candidate
        check()
    if validation is None or not restore_best:
        best.update(x=x, step=nit)
    f_best, g_best = fun(best["x"])
    epochs = {"n_epochs": nit / steps, "best_epoch": best["step"] / steps} if in_epochs else {}
    return OptimizeResult(
        x=best["x"], fun=float(f_best), jac=np.asarray(g_best, dtype=np.float64).ravel(),
        nit=nit, nfev=nfev + 1, status=0 if status == 3 else status,
        success=status in (0, 3), message=_MESSAGES[status], curves=curves,
        best_step=best["step"], **epochs,
    )
