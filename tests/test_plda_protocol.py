"""The protocols' PLDA ('plda', 'plda-lnorm' of ``metricfit verify``): EM to convergence on
the identities of the training pairs, settings read when a method is built (issue 28 item 5)."""

from metricfit import PLDA


def test_the_protocols_plda_converges_on_the_training_identities():
    from metricfit.experiments import methods

    for plda in (methods.make_method("plda"), methods.make_method("plda-lnorm")[-1]):
        assert plda.get_params()["tol"] == methods.PLDA_TOL > 0
        assert plda.get_params()["n_iter"] == methods.PLDA_N_ITER
        assert plda.get_params()["identities"] == "components"


def test_the_protocols_plda_settings_are_read_at_build(monkeypatch):
    from metricfit.experiments import methods

    monkeypatch.setattr(methods, "PLDA_N_ITER", 100)
    monkeypatch.setattr(methods, "PLDA_TOL", None)
    monkeypatch.setattr(methods, "PLDA_IDENTITIES", "pairs")
    assert methods.make_method("plda").get_params() == PLDA(n_iter=100).get_params()
