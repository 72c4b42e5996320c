"""The parameter section shared by the siamese learners' docstrings (one text, many classes)."""

SIAMESE_PARAMETERS = """
    n_components : int, default=None
        k, the dimension of the learned space (None: the number of features d).
    mapping : {'linear', 'tanh', 'mlp', 'convnet'} or Mapping, default='linear'
        The siamese branch f(., W) (seed 004 section 4): ``W x``; ``tanh(W x + h)``; two
        tanh layers; or seed 000's convnet on square images flattened to rows. A
        :class:`metricfit.mappings.Mapping` object (e.g. ``ConvNet((8, 8), 10, (4, 8, 16))``)
        is used as given (its sizes override n_components / n_hidden). The linear map takes
        the loss's prepared objective where the loss has one.
    n_hidden : int, default=None
        Hidden units of 'mlp' (None: n_components).
    normalize : bool, default=False
        L2-normalise the inputs first (seed 004 4.1), in fit and transform alike.
    init : {'auto', 'identity', 'wccn'}, array or transformer, default='auto'
        Linear mapping: A0, the start and the target of the regulariser; 'auto' and
        'identity' are the first k rows of I (-I variants), 'wccn' learns WCCN on the
        training pairs, each similar pair a class of its own (-WCCN, seed 002 III.D); an
        array of shape (k, d); a transformer with ``components_`` of shape (k, d) (e.g. a
        fitted :class:`~metricfit.backend.LDA` or :class:`~metricfit.PLDA`), or one without
        them yet, which a clone of is fitted on the training pairs and labels (note that
        scikit-learn's ``clone``, e.g. in ``GridSearchCV``, un-fits an estimator parameter,
        so there it is refitted on each training set). Non-linear: 'auto' draws
        Glorot-uniform weights (seed 004 eq. 13) and the regulariser pulls towards 0; an array
        is a flat parameter vector.
    lam : float, default=1e-3
        lambda, the weight of ``1/2 ||W - W0||^2``.
    similar_only : bool, default=False
        Learn from the similar pairs only ("-Sim", seed 002 III.E, seed 004); the threshold is
        still calibrated on all pairs.
    solver : {'lbfgs', 'sgd'}, default='lbfgs'
        L-BFGS on all pairs, or momentum SGD with early stopping on a held-out validation
        split (seed 004 Algorithm 1).
    max_iter : int, default=None
        Iterations (L-BFGS) or steps (SGD); None: 200 for L-BFGS, 20000 for SGD.
    tol : float, default=1e-5
        Gradient tolerance of L-BFGS-B (SGD stops by validation instead).
    learning_rate, momentum : float, default=1e-3, 0.9
        SGD step size and momentum. Algorithm 1 uses 1e-4 and 0.99 with ``batch_size=2``;
        on whitened LFW pixels that setting did not improve on the start within 20000 steps,
        while 1e-3, 0.9 and 32 did (``benchmarks/bench_fit.py``).
    batch_size : int, default=32
        SGD pairs per step, half similar and half dissimilar (2: one of each, Algorithm 1).
    validation_fraction : float, default=0.1
        SGD: share of the pairs held out (stratified) to choose the best model.
    validation_interval : int, default=100
        SGD: steps between validation checks (F of Algorithm 1).
    n_iter_no_change : int or None, default=20
        SGD: stop after this many checks without a better validation accuracy.
    random_state : int, RandomState or None, default=None
        SGD batches and validation split, Glorot initialisation.
    verbose : int, default=0
        Print the cost at each iteration (L-BFGS) or check (SGD) when > 0.
    warm_start : bool, default=False
        Start from the previous fit's parameters (the regulariser's target is unchanged).
    callback : callable, default=None
        ``callback(params, n_iter)`` after each iteration (L-BFGS) or check (SGD); params is
        the (k, d) matrix for a linear mapping, the flat vector otherwise.
    preprocessor : array-like of shape (n_points, n_features), default=None
        The points of index pairs: with it, ``fit``, ``pair_score``, ``predict``, ``score``
        and ``calibrate_threshold`` also take pairs as an (n_pairs, 2) integer array of row
        indices into it (metric-learn's convention), and fit the same model as on the
        (n_pairs, 2, n_features) pairs without forming them. A NumPy array, a
        ``numpy.memmap`` (float32/float64, read in blocks of rows) or a Dask array (the
        gradient becomes a map-reduce on the Dask scheduler in use; ``metricfit[dask]``).
        ``transform`` still takes points.
"""

SIAMESE_ATTRIBUTES = """
    components_ : ndarray of shape (k, d)
        The learned A (linear mapping only).
    params_ : ndarray of shape (n_params,)
        The learned flat parameters (non-linear mappings only).
    mapping_ : Mapping
        The fitted mapping's sizes (:mod:`metricfit.mappings`).
    threshold_ : float
        Score threshold of :meth:`predict`, calibrated for accuracy on the training pairs.
    n_iter_ : int
    curves_ : dict or None
        SGD only: ``step``, ``train`` and ``validation`` accuracy (maxDA) at each check.
    classes_ : ndarray of shape (2,)
        The coding of the pair labels given to ``fit`` ({-1, +1}, {0, 1} or {False, True});
        ``predict`` answers in it.
    n_features_in_ : int
"""
