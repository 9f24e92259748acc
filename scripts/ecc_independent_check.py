"""An independent re-implementation of the ECC protocol, to check the package's multi-seed gain.

Usage::

    python scripts/ecc_independent_check.py --seeds 5            # dcrouter, seeds 0..4

Written from docs/design.md section 3 without ecc_lib's comparisons, BT, EM or scoring code (only the
data loader and the embedding cache are shared): its own pair draw (per query, up to 7 non-tie
pairs among all model pairs, uniformly), its own 80/20 split, ECC's EM with a plain L-BFGS fit of
each cluster's weighted BT profile (scipy), the global BT model, the first pair of a test query as
its probe and the others scored. It prints, per seed, the ECC gain on all scored pairs and on the
pairs disjoint from the probe, then the mean over seeds beside ecc_lib's ``run_seeds`` on the
same seeds (different random streams, so the two agree only up to the spread over seeds). It also
recomputes ecc_lib's gains from the per-query NLL sums the protocol returns.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit, logsumexp

from ecc_lib.embed.encode import embed_texts
from ecc_lib.protocol.seeds import run_seeds
from ecc_lib.protocol.settings import Protocol
from ecc_lib.runs import provenance


def draw_pairs(scores: np.ndarray, n_pairs: int, rng: np.random.Generator):
    """Per query, up to ``n_pairs`` non-tie pairs (winner, loser) drawn uniformly; a loop over
    queries is fine in a check script."""
    m = scores.shape[1]
    ia, ib = np.triu_indices(m, k=1)
    out = []
    for q in range(scores.shape[0]):
        a, b = scores[q, ia], scores[q, ib]
        ok = np.flatnonzero(np.isfinite(a) & np.isfinite(b) & (a != b))
        pick = rng.permutation(ok)[:n_pairs]
        winner = np.where(scores[q, ia[pick]] > scores[q, ib[pick]], ia[pick], ib[pick])
        loser = np.where(winner == ia[pick], ib[pick], ia[pick])
        out.append((winner, loser))
    return out


def win_matrix(pairs, weights, m):
    w = np.zeros((m, m))
    for (win, lose), weight in zip(pairs, weights, strict=True):
        np.add.at(w, (win, lose), weight)
    return w


def fit_bt(w: np.ndarray, alpha: float = 1.0, theta0=None) -> np.ndarray:
    """argmin -sum W[i, j] log sigmoid(t_i - t_j) + alpha/2 ||t||^2 (L-BFGS)."""
    m = w.shape[0]

    def f(t):
        d = t[:, None] - t[None, :]
        value = -(w * log_expit(d)).sum() + 0.5 * alpha * t @ t
        g = w * expit(-d)
        grad = -(g.sum(axis=1) - g.sum(axis=0)) + alpha * t
        return value, grad

    start = np.zeros(m) if theta0 is None else theta0
    return minimize(f, start, jac=True, method="L-BFGS-B", options={"gtol": 1e-9}).x


def evidence(pairs, theta):
    """l_qk: mean over a query's pairs of log P_k(winner beats loser)."""
    out = np.zeros((len(pairs), theta.shape[0]))
    for q, (win, lose) in enumerate(pairs):
        if len(win):
            out[q] = log_expit(theta[:, win] - theta[:, lose]).mean(axis=1)
    return out


def ecc_fit(pairs, x, k, lam, temp, rng, max_iter=100):
    n, m = len(pairs), 1 + max(max(p[0].max(), p[1].max()) for p in pairs if len(p[0]))
    r = rng.dirichlet(np.ones(k), size=n)
    theta = np.zeros((k, m))
    inv_n = np.array([1.0 / len(p[0]) for p in pairs])
    # per-query win count matrices, flattened, weighted 1/N_q
    counts = np.zeros((n, m * m))
    for q, (win, lose) in enumerate(pairs):
        np.add.at(counts[q], win * m + lose, inv_n[q])
    previous = None
    for _ in range(max_iter):
        wins = (r.T @ counts).reshape(k, m, m)
        theta = np.stack([fit_bt(wins[c], theta0=theta[c]) for c in range(k)])
        c = r.T @ x
        c /= np.linalg.norm(c, axis=1, keepdims=True)
        log_p = log_expit(theta[:, :, None] - theta[:, None, :]).reshape(k, m * m)
        ev = counts @ log_p.T
        score = (ev + lam * x @ c.T) / temp
        objective = temp * logsumexp(score, axis=1).sum()
        r = np.exp(score - logsumexp(score, axis=1, keepdims=True))
        if previous is not None and abs(objective - previous) < 1e-6 * abs(previous):
            break
        previous = objective
    return theta, c


def one_seed(scores, x, seed, k=30, lam=3.0, temp=0.1, n_pairs=7):
    rng = np.random.default_rng(10_000 + seed)
    pairs = draw_pairs(scores, n_pairs, rng)
    keep = np.array([len(p[0]) >= 2 for p in pairs])
    pairs = [p for p, k_ in zip(pairs, keep, strict=True) if k_]
    x = x[keep].astype(float)
    n = len(pairs)
    test = np.zeros(n, dtype=bool)
    test[rng.permutation(n)[: round(0.2 * n)]] = True
    train_pairs = [p for p, t in zip(pairs, test, strict=True) if not t]
    test_pairs = [p for p, t in zip(pairs, test, strict=True) if t]
    m = scores.shape[1]
    theta, centroids = ecc_fit(train_pairs, x[~test], k, lam, temp, rng)
    g_theta = fit_bt(win_matrix(train_pairs, [1.0 / len(p[0]) for p in train_pairs], m))
    probes = [(p[0][:1], p[1][:1]) for p in test_pairs]
    r = np.exp(
        (evidence(probes, theta) + lam * x[test] @ centroids.T) / temp
        - logsumexp((evidence(probes, theta) + lam * x[test] @ centroids.T) / temp, axis=1)[:, None]
    )
    total = {"ecc": [0.0, 0.0], "global": [0.0, 0.0]}  # [all, disjoint]
    for q, (win, lose) in enumerate(test_pairs):
        w, lo = win[1:], lose[1:]
        p_ecc = r[q] @ expit(theta[:, w] - theta[:, lo])
        p_glob = expit(g_theta[w] - g_theta[lo])
        probe_models = {int(win[0]), int(lose[0])}
        disjoint = np.array(
            [
                int(a) not in probe_models and int(b) not in probe_models
                for a, b in zip(w, lo, strict=True)
            ],
            dtype=bool,
        )
        for name, p in (("ecc", p_ecc), ("global", p_glob)):
            loss = -np.log(np.clip(p, 1e-12, 1.0))
            total[name][0] += loss.sum()
            total[name][1] += loss[disjoint].sum()
    gain = 100 * (total["global"][0] - total["ecc"][0]) / total["global"][0]
    gain_d = 100 * (total["global"][1] - total["ecc"][1]) / total["global"][1]
    return gain, gain_d


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="dcrouter")
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    queries, outcomes = provenance.load_dataset(args.dataset)
    x = embed_texts(queries["text"].astype(str).tolist(), show_progress=False)
    frame = outcomes.groupby(["query_id", "model"])["score"].mean().unstack("model")
    frame = frame.reindex(queries["query_id"].astype(str))
    scores = frame.to_numpy(float)
    seeds = list(range(args.seeds))
    own = [one_seed(scores, x, s) for s in seeds]
    for s, (g, gd) in zip(seeds, own, strict=True):
        print(
            f"independent, seed {s}: ECC gain {g:6.2f} %, on pairs disjoint from the probe {gd:6.2f} %"
        )
    multi = run_seeds(
        queries, outcomes, x, protocol=Protocol(seeds=tuple(seeds)), methods=("global", "ecc")
    )
    for r in multi.results:
        f = r.per_query
        recomputed = 100 * (f["nll_global"].sum() - f["nll_ecc"].sum()) / f["nll_global"].sum()
        assert abs(recomputed - r.gain["ecc"]) < 1e-9, "per-query sums disagree with the gain"
    mine = np.array(own)
    theirs = np.array([[r.gain["ecc"], r.gain_disjoint["ecc"]] for r in multi.results])
    print(f"{'':<24} {'all pairs':>18} {'disjoint pairs':>18}")
    for name, v in (("independent", mine), ("ecc_lib run_seeds", theirs)):
        print(
            f"{name:<24} {v[:, 0].mean():>9.2f} +- {v[:, 0].std(ddof=1):4.2f}  "
            f"{v[:, 1].mean():>9.2f} +- {v[:, 1].std(ddof=1):4.2f}"
        )
    diff = theirs.mean(axis=0) - mine.mean(axis=0)
    print(
        f"difference of the means (ecc_lib - independent): {diff[0]:+.2f} pp (all), "
        f"{diff[1]:+.2f} pp (disjoint); per-query sums reproduce ecc_lib's gains exactly"
    )


if __name__ == "__main__":
    main()
