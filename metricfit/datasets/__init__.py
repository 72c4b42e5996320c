"""Face data sets (LFW, AT&T/ORL, Yale) and parsers for the official LFW protocol files.

The data live outside the repository in a *data folder* holding ``lfw/``, ``att_faces/`` and
``yale_faces/``, found by :func:`get_data_home`. The parsers read the formats of LFW's own
``README.txt`` (sections 3a, 3c, 3d); malformed files raise ``ValueError`` naming file and line.

Modules
-------
home
    :func:`get_data_home` and the loading of the data folder's ``.npz`` files.
lfw_files
    The LFW protocol files: :func:`read_lfw_pairs`, :func:`read_lfw_people`,
    :func:`lfw_pairs_to_indices`.
faces
    :func:`load_lfw`, :func:`load_att_faces`, :func:`load_yale_faces`; the LFW View 2 pairs
    (:func:`lfw_view2_pairs`, :func:`load_lfw_view2`), splitter and unrestricted training
    pairs.
labelled
    :func:`load_labelled_npz`: a user's labelled images or vectors (``--data PATH.npz``).
embeddings
    A user's embeddings (:func:`load_embeddings`: ``.npy`` + ids, ``.npz``, text table), id
    maps (:func:`read_id_map`) and LFW-style pair files over them
    (:func:`read_pairs_over_ids`): the files of ``metricfit score``.
"""

from .embeddings import (  # noqa: F401
                    EMBEDDING_FORMATS,
                    load_embeddings,
                    read_id_map,
                    read_pairs_over_ids,
)
from .faces import (  # noqa: F401
                    LFW_KEYS,
                    LFW_NPZ,
                    lfw_unrestricted_training_pairs,
                    lfw_view2_pairs,
                    lfw_view2_splitter,
                    load_att_faces,
                    load_lfw,
                    load_lfw_view2,
                    load_yale_faces,
)
from .home import ENV_VAR, get_data_home, read_npz  # noqa: F401
from .labelled import LABELLED_NPZ, load_labelled_npz  # noqa: F401
from .lfw_files import LFWPairs, lfw_pairs_to_indices, read_lfw_pairs, read_lfw_people

__all__ = [
    "LFWPairs", "get_data_home", "read_lfw_pairs", "read_lfw_people", "lfw_pairs_to_indices",
    "load_lfw", "load_att_faces", "load_yale_faces", "lfw_view2_pairs", "load_lfw_view2",
    "load_labelled_npz", "lfw_view2_splitter", "lfw_unrestricted_training_pairs",
    "load_embeddings", "read_id_map", "read_pairs_over_ids",
]
