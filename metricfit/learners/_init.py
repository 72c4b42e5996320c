"""The starting map of the Mahalanobis learners that optimise L (LMNN, MLKR): metric-learn's
``init`` choices ('auto', 'identity', 'pca', 'lda', 'random' or an array)."""

import numpy as np
from sklearn.utils import check_random_state

INIT_OPTIONS = {"auto", "identity", "pca", "lda", "random"}


def initial_components(init, X, n_components, y=None, random_state=None):
    """L0 of shape (n_components, n_features) in X's dtype.

    'auto' is metric-learn's rule: 'lda' when labels are given and ``n_components <=
    min(n_features, n_classes - 1)``, else 'pca' when ``n_components < min(n_features,
    n_samples)``, else 'identity' (the first n_components rows of I). 'random': standard
    normal entries. An array must have shape (n_components, n_features), finite values.
    """
    n, d = X.shape
    if not isinstance(init, str):
        L0 = np.asarray(init, dtype=np.float64)
        if L0.shape != (n_components, d) or not np.isfinite(L0).all():
            raise ValueError(f"init must have shape (n_components, n_features) = "
                             f"({n_components}, {d}) and finite values, got shape {L0.shape}.")
        return L0.astype(X.dtype)
    n_classes = np.unique(y).size if y is not None else 0
    if init == "auto":
        if y is not None and n_components <= min(d, n_classes - 1):
            init = "lda"
        elif n_components < min(d, n):
            init = "pca"
        else:
            init = "identity"
    if init == "identity":
        return np.eye(n_components, d, dtype=X.dtype)
    if init == "random":
        return check_random_state(random_state).standard_normal((n_components, d)).astype(X.dtype)
    if init == "pca":
        from sklearn.decomposition import PCA

        if n_components > min(n, d):
            raise ValueError(f"init='pca' needs n_components <= min(n_samples, n_features) = "
                             f"{min(n, d)}, got {n_components}.")
        pca = PCA(n_components=n_components, whiten=False, random_state=random_state)
        return pca.fit(X.astype(np.float64)).components_.astype(X.dtype)
    if y is None:
        raise ValueError("init='lda' needs class labels.")
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    if n_components > min(d, n_classes - 1):
        raise ValueError(f"init='lda' needs n_components <= min(n_features, n_classes - 1) = "
                         f"{min(d, n_classes - 1)}, got {n_components}.")
    lda = LinearDiscriminantAnalysis(n_components=n_components, solver="eigen", shrinkage=None)
    lda.fit(X.astype(np.float64), y)
    return lda.scalings_.T[:n_components].astype(X.dtype)
