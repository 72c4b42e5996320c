r"""Learning-rate schedules of the convnet's SGD: the factor that multiplies ``learning_rate``
at each step.

With ``t`` the steps taken before this one, ``T`` the largest number of steps
(``max_epochs`` epochs) and ``e = t / steps_per_epoch`` the epochs done:

==========  ==================================================================
constant    ``1``
step        ``0.1 ** k`` with k the number of the milestones 50 % and 75 % of
            ``T`` already passed (``t >= 0.5 T``, ``t >= 0.75 T``)
cosine      ``(1 + cos(pi t / T)) / 2`` (from 1 to nearly 0; Loshchilov and
            Hutter 2017, without restarts)
inverse     ``1 / (1 + e)``: halved after one epoch, a third after two (the
            ``1 / t`` decay of stochastic approximation, per epoch)
==========  ==================================================================

The factor scales the mini-batch gradient as it enters the momentum buffer
(``v_t = momentum v_{t-1} + factor_t g_t``, ``x_t = x_{t-1} - learning_rate v_t``, as Caffe's
SGD applies its learning-rate policy), so a gradient already in the buffer keeps the rate it
entered with.
"""

import math

__all__ = ["SCHEDULES", "learning_rate_factor"]

SCHEDULES = ("constant", "step", "cosine", "inverse")


def learning_rate_factor(schedule, step, steps_per_epoch, max_steps):
    """The factor of ``learning_rate`` at ``step`` (steps taken before this one, from 0).

    Parameters
    ----------
    schedule : {'constant', 'step', 'cosine', 'inverse'}
    step : int >= 0
    steps_per_epoch : int >= 1
    max_steps : int >= 1
        ``T``, the steps of ``max_epochs`` epochs.

    Returns
    -------
    factor : float in (0, 1]

    Examples
    --------
    >>> [learning_rate_factor("step", t, 10, 100) for t in (0, 49, 50, 75)]
    [1.0, 1.0, 0.1, 0.01]
    >>> learning_rate_factor("inverse", 20, 10, 100)
    0.3333333333333333
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"learning_rate_schedule must be one of {SCHEDULES}, got {schedule!r}.")
    if step < 0 or steps_per_epoch < 1 or max_steps < 1:
        raise ValueError(f"need step >= 0, steps_per_epoch >= 1 and max_steps >= 1, got "
                         f"{step}, {steps_per_epoch}, {max_steps}.")
    if schedule == "constant":
        return 1.0
    if schedule == "step":
        return (1.0, 0.1, 0.01)[(step >= 0.5 * max_steps) + (step >= 0.75 * max_steps)]
    if schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * min(step, max_steps) / max_steps))
    return 1.0 / (1.0 + step / steps_per_epoch)
