"""The AT&T protocol of seed 000 (Chopra, Hadsell, LeCun 2005) for :class:`SiameseCNN`.

Data: the 400 AT&T/ORL images (40 subjects x 10, 112x92), reduced to 56x46 by averaging 2x2
blocks (the paper says "4x4 subsampling", but 112x92 -> 56x46 is a factor of 2 per axis).

Per split (5 test subjects; the paper's split is subjects 36-40, ``--splits 7``):

- training: SET1 = the other 35 subjects (350 images). All 1575 genuine pairs of distinct
  SET1 images and 1575 impostor pairs drawn at random among SET1's pairs of different subjects
  (half genuine, half impostor, section 3.1); SiameseCNN holds out 10 % of them (stratified)
  for early stopping, as the paper validates on unused pairs of SET1; mini-batches are half
  genuine, half impostor. ``--validation subjects`` instead keeps 5 of the 35 subjects out of
  training (chosen with ``--seed``) and stops early on their pairs (225 genuine, 225
  impostor): validation then measures verification of people the network has not seen.
- Gaussian-model claims (section 4.1): each test subject is modelled on its first 5 images
  (files 1-5). Genuine claims: its other 5 images (5 x 5 = 25 per split). Impostor claims: all
  10 images of each of the other 4 test subjects claiming it (5 x 40 = 200 per split). The
  paper reports 500 genuine / 4500 impostor claims for 5 subjects without saying how they were
  built; 5 subjects x 5 held-out images cannot give 500 distinct genuine claims.
- the same claims scored by the minimum energy to the subject's 5 model images (the decision
  rule of section 2: "compare the minimum E_W(X1, X2) to a threshold");
- plain pair energy: all 1225 unordered pairs of distinct SET2 images (225 genuine, 1000
  impostor), thresholded on E (how Table 1's FA/FR is described in section 3.2).

Reported: the false-reject rate at false-accept 10 %, 7.5 % and 5 % (Table 1: AT&T test 0.00,
1.00, 1.00 %).

    python benchmarks/att_siamese_cnn.py --splits 7            # the paper's split
    python benchmarks/att_siamese_cnn.py --splits all          # the 8 disjoint splits
    python benchmarks/att_siamese_cnn.py --splits all --validation subjects
    python benchmarks/att_siamese_cnn.py --splits all --validation subjects --loss contrastive \
        --energy l2 --augment --weight-decay 1e-3 --schedule cosine   # the training options
    python benchmarks/att_siamese_cnn.py --summarise /tmp/cnn/att/*.json
    python benchmarks/att_siamese_cnn.py --splits all --save-models ...   # then, no training:
    python benchmarks/att_siamese_cnn.py --splits all --reevaluate [--shrinkage 0.1]  # rewrites
    # a recipe refitted on all 35 subjects for --epochs, the last epoch's weights:
    python benchmarks/att_siamese_cnn.py --splits all --validation subjects --refit \
        --weights last --network-seed 1 --save-models --out-dir /tmp/cnn/r1 ...
    # the ensemble of models saved in several out-dirs (embeddings side by side; no training):
    python benchmarks/att_siamese_cnn.py --splits all --ensemble /tmp/cnn/r0 /tmp/cnn/r1 \
        --out-dir /tmp/cnn/ensemble
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy import ndimage

from metricfit.backend import gaussian_claims
from metricfit.datasets import load_att_faces, load_lfw
from metricfit.learners import score_kind
from metricfit.learners.siamese_cnn import SiameseCNN
from metricfit.losses.distances import energy
from metricfit.metrics import false_reject_at_false_accept, max_decision_accuracy
from metricfit.pairs import sample_pairs

FAR_TARGETS = (0.10, 0.075, 0.05)
PAPER_FRR = (0.00, 1.00, 1.00)  # percent, Table 1, AT&T (Test)
N_MODEL = 5
N_SPLITS = 8
N_VALIDATION_SUBJECTS = 5


def block_mean(images, factor=2):
    """Average ``factor x factor`` blocks: (n, H, W) -> (n, H // factor, W // factor)."""
    n, h, w = images.shape
    h, w = h // factor * factor, w // factor * factor
    blocks = images[:, :h, :w].reshape(n, h // factor, factor, w // factor, factor)
    return blocks.mean(axis=(2, 4), dtype=np.float64).astype(np.float32)


def load_att_56x46(data_home=None):
    """AT&T images at 56x46 (float32, 0..255), subject labels 0..39, file numbers 1..10."""
    data = load_att_faces(data_home)
    return block_mean(data.images), data.labels, data.image_index


def test_subjects(split):
    """The 5 subjects of split ``split`` (0..7): 5 split .. 5 split + 4 (0-based)."""
    return np.arange(5 * split, 5 * split + 5)


def training_pairs(labels, random_state, impostors=1):
    """All genuine pairs of ``labels`` and ``impostors`` times as many random impostor pairs
    (row indices)."""
    n_genuine = sum(int(m * (m - 1) // 2) for m in np.unique(labels, return_counts=True)[1])
    return sample_pairs(labels, n_genuine, impostors * n_genuine, random_state=random_state)


def frr_at(genuine, scores):
    """FRR (percent) at the FAR targets for boolean ``genuine`` and higher-is-genuine scores."""
    s = np.where(genuine, 1, -1)
    return (100 * false_reject_at_false_accept(s, scores, far=FAR_TARGETS)).tolist()


def claims(subjects, is_model):
    """Every claim "probe is subject c": c's non-model images (genuine) and all images of the
    other subjects (impostor), in the order of :func:`metricfit.backend.gaussian_claims`."""
    probe, claimed = [], []
    for c in np.unique(subjects):
        rows = np.flatnonzero((subjects != c) | ~is_model)
        probe.append(rows)
        claimed.append(np.full(rows.size, c))
    probe, claimed = np.concatenate(probe), np.concatenate(claimed)
    return probe, claimed, subjects[probe] == claimed


def evaluate(Z, subjects, image_index, shrinkage=0.5, gaussian=True, kind="l1"):
    """FRR at the targets for the Gaussian model (unless not ``gaussian``), the min-energy
    rule and the pair energy (``kind``: the energy's norm, that of the training)."""
    is_model = image_index <= N_MODEL
    probe, claimed, genuine = claims(subjects, is_model)
    min_energy = np.array([
        -energy(np.repeat(Z[p][None], N_MODEL, 0), Z[(subjects == c) & is_model], kind)[0].min()
        for p, c in zip(probe, claimed, strict=True)])
    i, j = np.triu_indices(len(Z), k=1)
    result = {
        "n_genuine_claims": int(genuine.sum()),
        "n_impostor_claims": int((~genuine).sum()),
        "min_energy": frr_at(genuine, min_energy),
        "n_genuine_pairs": int((subjects[i] == subjects[j]).sum()),
        "n_impostor_pairs": int((subjects[i] != subjects[j]).sum()),
        "pair_energy": frr_at(subjects[i] == subjects[j], -energy(Z[i], Z[j], kind)[0]),
    }
    if gaussian:
        model = gaussian_claims(Z, subjects, is_model, shrinkage)
        assert (model["probe"] == probe).all() and (model["claimed"] == claimed).all()
        result["gaussian"] = frr_at(model["genuine"], model["score"])
    return result


def image_pairs(images, labels, random_state, impostors=1):
    """``(pairs, y)``: all genuine pairs of the subjects in ``labels`` and ``impostors`` times
    as many impostors."""
    index, y = training_pairs(labels, random_state, impostors)
    return np.stack([images[index[:, 0]], images[index[:, 1]]], axis=1), y


def lfw_pairs_56x46(n_genuine, seed, data_home=None):
    """``(pairs, y)``: ``n_genuine`` identity-balanced genuine pairs of LFW people (those with
    >= 2 images) and as many impostors, the 62x47 crops resized to 56x46 (linear)."""
    data = load_lfw(data_home)
    keep = np.bincount(data.person)[data.person] >= 2
    images, people = data.images[keep], data.person[keep]
    index, y = sample_pairs(people, n_genuine, n_genuine, random_state=seed, balance="identity")
    rows = np.unique(index)
    zoom = (1, 56 / images.shape[1], 46 / images.shape[2])
    small = np.zeros((len(images), 56, 46), dtype=np.float32)
    small[rows] = ndimage.zoom(images[rows].astype(np.float64), zoom, order=1, mode="nearest",
                               grid_mode=True)
    return np.stack([small[index[:, 0]], small[index[:, 1]]], axis=1), y


def validation_subjects(split, seed):
    """``N_VALIDATION_SUBJECTS`` of the 35 training subjects of ``split``, drawn with ``seed``."""
    train = np.setdiff1d(np.arange(5 * N_SPLITS), test_subjects(split))
    return np.random.default_rng(seed).choice(train, N_VALIDATION_SUBJECTS, replace=False)


def run_split(split, images, labels, image_index, args):
    test = np.isin(labels, test_subjects(split))
    validation = None
    if args.validation == "subjects":
        held_out = np.isin(labels, validation_subjects(split, args.seed))
        validation = image_pairs(images[held_out], labels[held_out], args.seed)
        if not args.refit:
            test |= held_out  # neither trains
    network_seed = args.seed if args.network_seed is None else args.network_seed
    pairs, y = image_pairs(images[~test], labels[~test], network_seed, args.impostors)
    if args.lfw_pairs:
        extra, y_extra = lfw_pairs_56x46(args.lfw_pairs, network_seed + split, args.data_home)
        pairs, y = np.concatenate([pairs, extra]), np.concatenate([y, y_extra])
    test = np.isin(labels, test_subjects(split))
    est = SiameseCNN(args.n_components, max_epochs=args.epochs, batch_size=args.batch_size,
                     learning_rate=args.learning_rate, momentum=args.momentum,
                     loss=args.loss, energy=args.energy, random_state=network_seed,
                     verbose=args.verbose, augment=args.augment,
                     weight_decay=args.weight_decay, learning_rate_schedule=args.schedule,
                     early_stopping=args.weights == "best", n_jobs=args.n_jobs)
    start = time.perf_counter()
    est.fit(pairs, y, validation_data=validation)
    seconds = time.perf_counter() - start
    if args.save_models:
        est.save(Path(args.out_dir) / f"att_split{split}.npz")
    Z, kind = embed(est, images[test])
    result = evaluate(Z, labels[test], image_index[test], args.shrinkage, kind=kind)
    result["pixels"] = pixel_baseline(images[test], labels[test], image_index[test])
    result["validation_claims"] = validation_claims(est, split, images, labels, image_index,
                                                    args)
    result.update(split=split, test_subjects=(test_subjects(split) + 1).tolist(),
                  n_train_pairs=int(len(y)), fit_seconds=seconds, n_epochs=est.n_epochs_,
                  best_epoch=est.best_epoch_, best_validation=max(est.curves_["validation"]),
                  validation_curve=est.curves_["validation"], args=vars(args))
    return result


def validation_claims(est, split, images, labels, image_index, args):
    """The rules of :func:`evaluate` on the 5 validation subjects (``--validation subjects``:
    unseen in training unless ``--refit``), the claim protocol's own numbers for choosing a
    recipe without the test subjects; None without validation subjects."""
    if args.validation != "subjects":
        return None
    held_out = np.isin(labels, validation_subjects(split, args.seed))
    Z, kind = embed(est, images[held_out])
    return evaluate(Z, labels[held_out], image_index[held_out], args.shrinkage, kind=kind)


def embed(est, images):
    """Embeddings (float64) and the energy that compares them: the training's L1 or L2, or,
    for the losses that score pairs by the cosine ('triangular'), L2 between unit vectors
    (a monotone function of the cosine)."""
    Z = est.transform(images).astype(np.float64)
    if score_kind(est) == "cosine":
        return Z / np.linalg.norm(Z, axis=1, keepdims=True), "l2"
    return Z, est.energy


def reevaluate(split, images, labels, image_index, args):
    """The result of ``run_split`` from the model it saved (``--save-models``), e.g. with
    another ``--shrinkage``; training numbers are read from the saved JSON (which ``main``
    then rewrites)."""
    est = SiameseCNN.load(Path(args.out_dir) / f"att_split{split}.npz")
    result = json.loads((Path(args.out_dir) / f"att_split{split}.json").read_text())
    test = np.isin(labels, test_subjects(split))
    Z, kind = embed(est, images[test])
    result.update(evaluate(Z, labels[test], image_index[test], args.shrinkage, kind=kind))
    result["pixels"] = pixel_baseline(images[test], labels[test], image_index[test])
    result["args"] = dict(result["args"], shrinkage=args.shrinkage)
    args.validation = result["args"]["validation"]
    result["validation_claims"] = validation_claims(est, split, images, labels, image_index,
                                                    args)
    return result


def ensemble(split, images, labels, image_index, args):
    """The rules on the members' embeddings side by side (the models ``--save-models`` wrote
    for ``split`` in each of ``args.ensemble``): with the L2 energy, the ensemble's squared
    energy is the sum of the members'. ``validation`` is the ensemble's maxDA on the pairs of
    the validation subjects of ``--seed`` (as ``--validation subjects`` drew them)."""
    members = [SiameseCNN.load(Path(d) / f"att_split{split}.npz") for d in args.ensemble]
    test = np.isin(labels, test_subjects(split))
    Z, kinds = zip(*(embed(est, images[test]) for est in members), strict=True)
    if len(set(kinds)) != 1:
        raise ValueError(f"the members compare embeddings differently: {kinds}")
    result = evaluate(np.hstack(Z), labels[test], image_index[test], args.shrinkage,
                      kind=kinds[0])
    result["pixels"] = pixel_baseline(images[test], labels[test], image_index[test])
    held_out = np.isin(labels, validation_subjects(split, args.seed))
    (index, y) = training_pairs(labels[held_out], args.seed)
    V = np.hstack([embed(est, images[held_out])[0] for est in members])
    scores = -energy(V[index[:, 0]], V[index[:, 1]], kinds[0])[0]
    result.update(split=split, test_subjects=(test_subjects(split) + 1).tolist(),
                  members=list(args.ensemble), validation=max_decision_accuracy(y, scores)[0],
                  args=vars(args))
    return result


def pixel_baseline(images, subjects, image_index):
    """The min-distance and pair-distance rules on the raw 56x46 pixels (L1, no learning)."""
    result = evaluate(images.reshape(len(images), -1).astype(np.float64) / 255, subjects,
                      image_index, gaussian=False)
    return {"min_energy": result["min_energy"], "pair_energy": result["pair_energy"]}


def summarise(results, extra_rules=()):
    """Markdown rows: each method, one split (the paper's, if present) and mean +- SEM.
    ``extra_rules``: more ``(key, name)`` rows, ``key`` a result key or a pair of keys."""
    fmt = " / ".join
    rows = ["| rule | split | FRR % at FA 10 / 7.5 / 5 % |", "|---|---|---|",
            f"| paper (Gaussian model) | subjects 36-40 | {fmt(f'{v:.2f}' for v in PAPER_FRR)} |"]
    rules = [("gaussian", "Gaussian model, 25 gen. / 200 imp. claims"),
             ("min_energy", "min energy to 5 model images, same claims"),
             ("pair_energy", "pair energy, 225 gen. / 1000 imp. pairs")]
    if all("pixels" in r for r in results):
        rules += [(("pixels", "min_energy"), "raw pixels, min L1 distance, same claims"),
                  (("pixels", "pair_energy"), "raw pixels, pair L1 distance, same pairs")]
    rules += list(extra_rules)
    for key, name in rules:
        get = ((lambda r, key=key: r[key[0]][key[1]]) if isinstance(key, tuple)
               else (lambda r, key=key: r[key]))
        for r in results:
            if r["split"] == N_SPLITS - 1:
                rows.append(f"| {name} | subjects 36-40 | {fmt(f'{v:.2f}' for v in get(r))} |")
        if len(results) > 1:
            v = np.array([get(r) for r in results])
            sem = v.std(axis=0, ddof=1) / np.sqrt(len(v))
            cells = fmt(f"{m:.2f} ± {e:.2f}" for m, e in zip(v.mean(0), sem, strict=True))
            rows.append(f"| {name} | mean ± SEM, {len(v)} splits | {cells} |")
    return "\n".join(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", default="7", help="'all' or comma-separated 0..7")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-2)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--loss", default="square_exponential",
                        choices=("square_exponential", "contrastive", "triangular"))
    parser.add_argument("--augment", action="store_true",
                        help="SiameseCNN(augment=True): random shifts, scales, rotations, flips")
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--schedule", default="constant",
                        choices=("constant", "step", "cosine", "inverse"))
    parser.add_argument("--n-jobs", type=int, default=None, help="SiameseCNN(n_jobs=)")
    parser.add_argument("--energy", default="l1", choices=("l1", "l2"))
    parser.add_argument("--shrinkage", type=float, default=0.5)
    parser.add_argument("--validation", choices=("pairs", "subjects"), default="pairs",
                        help="early stopping on held-out pairs of the training subjects (the "
                        "paper's) or on pairs of 5 training subjects kept out of training")
    parser.add_argument("--seed", type=int, default=0,
                        help="draws the validation subjects and their pairs; also seeds the "
                        "network unless --network-seed")
    parser.add_argument("--network-seed", type=int, default=None,
                        help="seeds the network's weights, batches and augmentation and the "
                        "training pairs (default: --seed)")
    parser.add_argument("--impostors", type=int, default=1,
                        help="impostor training pairs per genuine pair (batches stay half "
                        "genuine, half impostor)")
    parser.add_argument("--lfw-pairs", type=int, default=0,
                        help="LFW genuine pairs (and as many impostors) of people with >= 2 "
                        "images, resized to 56x46, mixed into each split's training pairs")
    parser.add_argument("--n-components", type=int, default=50, help="SiameseCNN(n_components)")
    parser.add_argument("--refit", action="store_true",
                        help="with --validation subjects --weights last: the 5 validation "
                        "subjects train too (their pairs then measure seen people; nothing is "
                        "chosen on them): a recipe chosen on validation, refitted on all 35")
    parser.add_argument("--weights", choices=("best", "last"), default="best",
                        help="the best validation epoch's weights (early stopping) or the "
                        "last epoch's (SiameseCNN(early_stopping=False): all --epochs run)")
    parser.add_argument("--verbose", type=int, default=1)
    parser.add_argument("--out-dir", default="/tmp/cnn/att")
    parser.add_argument("--save-models", action="store_true")
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--summarise", nargs="*", help="summarise these result files and exit")
    parser.add_argument("--ensemble", nargs="+",
                        help="evaluate the ensemble of the models saved (--save-models) in "
                        "these directories, written to --out-dir (no training)")
    parser.add_argument("--reevaluate", action="store_true",
                        help="evaluate the models saved in --out-dir again (no training) and "
                        "rewrite their JSON (training fields kept)")
    args = parser.parse_args(argv)
    if args.refit and (args.validation != "subjects" or args.weights != "last"):
        parser.error("--refit needs --validation subjects --weights last")
    if args.summarise:
        print(summarise([json.loads(Path(p).read_text()) for p in args.summarise]))
        return
    splits = range(N_SPLITS) if args.splits == "all" else [int(k) for k in args.splits.split(",")]
    Path(args.out_dir).mkdir(parents=True, exist_ok=True)
    images, labels, image_index = load_att_56x46(args.data_home)
    results = []
    for split in splits:
        if args.ensemble:
            result = ensemble(split, images, labels, image_index, args)
        elif args.reevaluate:
            result = reevaluate(split, images, labels, image_index, args)
        else:
            result = run_split(split, images, labels, image_index, args)
        (Path(args.out_dir) / f"att_split{split}.json").write_text(json.dumps(result, indent=1))
        keys = ("gaussian", "min_energy", "pair_energy", "fit_seconds", "best_epoch",
                "validation")
        print(f"split {split}: {json.dumps({k: result[k] for k in keys if k in result})}",
              flush=True)
        results.append(result)
    print(summarise(results))


if __name__ == "__main__":
    main()
