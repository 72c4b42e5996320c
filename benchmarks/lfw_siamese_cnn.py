"""The siamese convnet of seed 000 trained on LFW people, tested on AT&T (issue 14 items 2, 5).

Seed 000 trained on another database's identities (FERET) when its own had too few subjects.
Here the extra identities are LFW's:

- ``--train``: a :class:`SiameseCNN` on identity-balanced pairs of LFW people with at least 2
  images (62x47 grey crops of the inner face). ``--validation-fraction`` of those people are
  kept out of training; early stopping and the threshold use identity-balanced pairs of them
  only. The model is written with :meth:`SiameseCNN.save` (arrays + JSON, no pickle) to
  ``<out-dir>/lfw_model.npz``: load it with ``SiameseCNN.load`` to embed your own 62x47 faces
  (AT&T-like 112x92 heads: :func:`att_inner_face` first).
- ``--evaluate``: that model on the 8 disjoint AT&T splits of ``att_siamese_cnn.py``, with its
  claim protocol (:func:`att_siamese_cnn.evaluate`): all 40 AT&T subjects are unseen.
- ``--finetune``: per split, a warm start from the LFW model (``warm_start=True``) trained on
  the split's AT&T training subjects (5 of the 35 held out for early stopping, as
  ``att_siamese_cnn.py --validation subjects``), optionally mixed with LFW pairs, tested on the
  split's 5 test subjects.

AT&T images and LFW crops frame the face differently (whole head on a plain background against
eyebrows-to-chin): :func:`att_inner_face` crops rows 20-111, columns 11-80 of the 112x92 AT&T
image (the eyes then sit at about a third of the height and the mouth at three quarters, as in
the LFW crops) and resizes the 92x70 box to 62x47; ``--att-framing head`` squeezes the whole
head to 62x47 instead. Results, commands and wall times: ``docs/results/att.md``.

    python benchmarks/lfw_siamese_cnn.py --train --epochs 12 --n-jobs 1     # ~12 min, 1 thread
    python benchmarks/lfw_siamese_cnn.py --evaluate [--att-framing head]   # seconds
    python benchmarks/lfw_siamese_cnn.py --finetune --epochs 8 --learning-rate 1e-3 --n-jobs 1 \
        [--att-framing head] [--lfw-pairs 1500] --out-dir DIR --model-dir /tmp/cnn_lfw/lfw
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy import ndimage

sys.path.insert(0, str(Path(__file__).resolve().parent))
from att_siamese_cnn import (  # noqa: E402
    N_SPLITS,
    embed,
    evaluate,
    image_pairs,
    load_att_56x46,
    pixel_baseline,
    summarise,
    test_subjects,
    validation_subjects,
)

from metricfit.datasets import load_att_faces, load_lfw  # noqa: E402
from metricfit.learners.siamese_cnn import SiameseCNN  # noqa: E402
from metricfit.pairs import sample_pairs  # noqa: E402

LFW_SHAPE = (62, 47)
ATT_FACE_BOX = (slice(20, 112), slice(11, 81))
"""Rows and columns of the 112x92 AT&T image that frame the face as the LFW crops do."""
MODEL_FILE = "lfw_model.npz"


def att_inner_face(images, box=ATT_FACE_BOX):
    """112x92 AT&T heads -> 62x47 inner faces framed like the LFW crops (float32, 0..255):
    the box :data:`ATT_FACE_BOX`, resized by linear interpolation. ``box=(slice(None),
    slice(None))``: the whole head, squeezed to 62x47 (``--att-framing head``)."""
    box = np.asarray(images, dtype=np.float64)[:, box[0], box[1]]
    zoom = (1, LFW_SHAPE[0] / box.shape[1], LFW_SHAPE[1] / box.shape[2])
    out = ndimage.zoom(box, zoom, order=1, mode="nearest", grid_mode=True)
    return out.astype(np.float32)


def lfw_people(min_images=2):
    """LFW images (float32) and person labels of the people with >= ``min_images`` images."""
    data = load_lfw()
    counts = np.bincount(data.person)
    keep = counts[data.person] >= min_images
    return data.images[keep].astype(np.float32), data.person[keep]


def split_people(labels, fraction, seed):
    """Boolean mask of the images of ``fraction`` of the people (drawn with ``seed``)."""
    people = np.unique(labels)
    held = np.random.default_rng(seed).choice(people, int(round(fraction * people.size)),
                                              replace=False)
    return np.isin(labels, held)


def lfw_pairs(images, labels, n_genuine, seed):
    """``(pairs, y)``: ``n_genuine`` identity-balanced genuine pairs and as many impostors."""
    index, y = sample_pairs(labels, n_genuine, n_genuine, random_state=seed,
                            balance="identity")
    return np.stack([images[index[:, 0]], images[index[:, 1]]], axis=1), y


def estimator(args, **extra):
    return SiameseCNN(max_epochs=args.epochs, batch_size=args.batch_size,
                      learning_rate=args.learning_rate, loss=args.loss, energy=args.energy,
                      augment=args.augment, weight_decay=args.weight_decay,
                      learning_rate_schedule=args.schedule, n_jobs=args.n_jobs,
                      random_state=args.seed, verbose=args.verbose, **extra)


def train(args):
    """Fit on LFW people, early stopping on held-out people; save the model and a JSON."""
    images, labels = lfw_people()
    held = split_people(labels, args.validation_fraction, args.seed)
    pairs, y = lfw_pairs(images[~held], labels[~held], args.n_genuine, args.seed)
    validation = lfw_pairs(images[held], labels[held], args.n_validation, args.seed)
    est = estimator(args)
    if args.warm_start:  # continue the model of --model-dir on the same pairs
        est = SiameseCNN.load(Path(args.model_dir) / MODEL_FILE).set_params(
            **estimator(args, warm_start=True).get_params())
    start = time.perf_counter()
    est.fit(pairs, y, validation_data=validation)
    seconds = time.perf_counter() - start
    est.save(Path(args.out_dir) / MODEL_FILE)
    info = {"n_train_pairs": int(len(y)), "n_validation_pairs": int(len(validation[1])),
            "n_train_people": int(np.unique(labels[~held]).size),
            "n_validation_people": int(np.unique(labels[held]).size),
            "fit_seconds": seconds, "n_epochs": est.n_epochs_, "best_epoch": est.best_epoch_,
            "validation": est.curves_["validation"], "args": vars(args)}
    (Path(args.out_dir) / "lfw_train.json").write_text(json.dumps(info, indent=1, allow_nan=False))
    print(json.dumps({k: v for k, v in info.items() if k != "args"}), flush=True)


def load_att_both(data_home=None, framing="face"):
    """AT&T as the network sees it (62x47 inner faces, or whole heads with ``framing='head'``),
    as ``att_siamese_cnn.py`` sees it (56x46 heads, for its raw-pixel rows), subject labels
    0..39 and file numbers 1..10."""
    data = load_att_faces(data_home)
    heads, labels, image_index = load_att_56x46(data_home)
    box = ATT_FACE_BOX if framing == "face" else (slice(None), slice(None))
    return att_inner_face(data.images, box), heads, labels, image_index


def evaluate_split(est, split, att, args):
    """``att_siamese_cnn.py``'s result dict for split ``split``'s 5 test subjects: the claim
    protocol on the network's embeddings of their 62x47 faces, the raw pixels of the 56x46
    heads (``pixels``, the rows of ``docs/results/att.md``) and of the 62x47 input."""
    faces, heads, labels, image_index = att
    test = np.isin(labels, test_subjects(split))
    Z, kind = embed(est, faces[test])
    result = evaluate(Z, labels[test], image_index[test], args.shrinkage, kind=kind)
    result["pixels"] = pixel_baseline(heads[test], labels[test], image_index[test])
    result["pixels_62x47"] = pixel_baseline(faces[test], labels[test], image_index[test])
    result.update(split=split, test_subjects=(test_subjects(split) + 1).tolist(),
                  args=vars(args))
    return result


def finetune_split(split, att, args):
    """Warm start from the LFW model on the split's AT&T training subjects (5 of the 35 kept
    out for early stopping), optionally with ``args.lfw_pairs`` LFW genuine pairs (and as many
    impostors) mixed in; then :func:`evaluate_split`."""
    faces, _, labels, _ = att
    held_out = np.isin(labels, validation_subjects(split, args.seed))
    train = ~(np.isin(labels, test_subjects(split)) | held_out)
    pairs, y = image_pairs(faces[train], labels[train], args.seed)
    if args.lfw_pairs:
        images, people = lfw_people()
        extra, y_extra = lfw_pairs(images, people, args.lfw_pairs, args.seed + split)
        pairs, y = np.concatenate([pairs, extra]), np.concatenate([y, y_extra])
    est = SiameseCNN.load(Path(args.model_dir) / MODEL_FILE)
    est.set_params(**estimator(args, warm_start=True).get_params())
    start = time.perf_counter()
    est.fit(pairs, y, validation_data=image_pairs(faces[held_out], labels[held_out], args.seed))
    result = evaluate_split(est, split, att, args)
    result.update(n_train_pairs=int(len(y)), fit_seconds=time.perf_counter() - start,
                  n_epochs=est.n_epochs_, best_epoch=est.best_epoch_,
                  validation=est.curves_["validation"],
                  best_validation=max(est.curves_["validation"]))
    return result


def run_att(args):
    """``--evaluate`` or ``--finetune`` on the splits: a JSON per split and the table."""
    att = load_att_both(args.data_home, args.att_framing)
    splits = range(N_SPLITS) if args.splits == "all" else [int(k) for k in args.splits.split(",")]
    est = SiameseCNN.load(Path(args.model_dir) / MODEL_FILE) if args.evaluate else None
    results = []
    for split in splits:
        if args.evaluate:
            result = evaluate_split(est, split, att, args)
        else:
            result = finetune_split(split, att, args)
        text = json.dumps(result, indent=1, allow_nan=False)  # strict JSON
        (Path(args.out_dir) / f"att_split{split}.json").write_text(text)
        keys = ("gaussian", "min_energy", "pair_energy", "fit_seconds", "best_epoch")
        print(f"split {split}: {json.dumps({k: result[k] for k in keys if k in result})}",
              flush=True)
        results.append(result)
    print(summarise(results, EXTRA_RULES))


EXTRA_RULES = [(("pixels_62x47", "min_energy"), "raw pixels of the 62x47 input, min L1"),
               (("pixels_62x47", "pair_energy"), "raw pixels of the 62x47 input, pair L1")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--train", action="store_true", help="train on LFW people and save")
    mode.add_argument("--evaluate", action="store_true", help="the saved model on AT&T")
    mode.add_argument("--finetune", action="store_true",
                      help="warm start from the saved model on each split's AT&T subjects")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--n-genuine", type=int, default=15000,
                        help="genuine LFW training pairs (and as many impostors)")
    parser.add_argument("--n-validation", type=int, default=1000,
                        help="genuine pairs of the held-out LFW people (and as many impostors)")
    parser.add_argument("--validation-fraction", type=float, default=0.1,
                        help="share of the LFW people held out for early stopping")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-2)
    parser.add_argument("--loss", default="contrastive")
    parser.add_argument("--energy", default="l2", choices=("l1", "l2"))
    parser.add_argument("--no-augment", dest="augment", action="store_false")
    parser.add_argument("--weight-decay", type=float, default=1e-3)
    parser.add_argument("--schedule", default="cosine")
    parser.add_argument("--shrinkage", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--verbose", type=int, default=1)
    parser.add_argument("--splits", default="all", help="'all' or comma-separated 0..7")
    parser.add_argument("--lfw-pairs", type=int, default=0,
                        help="--finetune: LFW genuine pairs (and as many impostors) mixed in")
    parser.add_argument("--out-dir", default="/tmp/cnn_lfw/lfw",
                        help="where results (and, with --train, the model) are written")
    parser.add_argument("--model-dir", default=None,
                        help="where --evaluate and --finetune read lfw_model.npz "
                        "(default: --out-dir)")
    parser.add_argument("--att-framing", choices=("face", "head"), default="face",
                        help="AT&T as the network sees it: the inner face framed like the "
                        "LFW crops, or the whole head squeezed to 62x47")
    parser.add_argument("--warm-start", action="store_true",
                        help="--train: continue the model in --model-dir for --epochs more "
                        "epochs (the schedule restarts)")
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args(argv)
    if args.warm_start and not args.train:
        parser.error("--warm-start goes with --train")
    args.model_dir = args.model_dir or args.out_dir
    Path(args.out_dir).mkdir(parents=True, exist_ok=True)
    if args.train:
        train(args)
    else:
        run_att(args)


if __name__ == "__main__":
    main()
