"""Save and load fitted routers as arrays plus JSON: a format that runs no code when read.

A fitted router (any family of :data:`ecc_lib.routers.ROUTER_FAMILIES`, the references
:class:`~ecc_lib.routers.BestFixedRouter` and :class:`~ecc_lib.routers.RandomRouter` too) is
written as two files:

- ``router.npz``: every array of its fitted state, under flat names (``np.savez``; no object
  arrays, so :func:`numpy.load` reads it with ``allow_pickle=False``);
- ``router.json``: its class, constructor parameters and the rest of its state as a JSON tree in
  which arrays are references into the ``.npz`` file, plus the metadata given by the caller
  (embedder, models, utility settings, training-data digest, package version).

Nothing is pickled. Objects inside a router are written by kind:

- scikit-learn transformers and estimators of an allow list (:data:`ESTIMATOR_CLASSES`: the
  target scalers, ``MLPRegressor``, ECC) as their constructor parameters and public fitted
  attributes (names ending in ``_``);
- the neighbour regressor of :class:`~ecc_lib.routers.KNNRouter` as its training arrays, fitted
  again on load (its search tree is rebuilt, the predictions are the same);
- torch networks (:mod:`ecc_lib.routers.networks`) as their ``state_dict`` tensors (numpy arrays)
  and the hyperparameters that rebuild the module, read from the module itself;
- numpy generators as their bit generator state.

Reading looks classes up in these allow lists only (a name in the JSON never imports anything),
and an ``.npz`` holding an object array is refused. Anything else in a router's state is refused
when saving, with its name, rather than dropped.
"""

from __future__ import annotations

import json
import warnings
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from ecc_lib.routers import base

FORMAT = "ecc_lib.router"
"""The ``format`` field of ``router.json``."""
FORMAT_VERSION = 1
"""Version of the file layout; a file of another version is refused."""
ARRAYS_FILE = "router.npz"
META_FILE = "router.json"


class RouterFileError(ValueError):
    """A router folder that cannot be read (or a router that cannot be written) safely."""


def _router_classes() -> dict[str, type]:
    from ecc_lib.routers import ROUTER_FAMILIES

    references = (base.BestFixedRouter, base.RandomRouter)
    return {cls.__name__: cls for cls in (*ROUTER_FAMILIES.values(), *references)}


def _estimator_classes() -> dict[str, type]:
    from sklearn.neural_network import MLPRegressor
    from sklearn.preprocessing import MinMaxScaler, StandardScaler

    from ecc_lib.ecc.estimator import ECC

    return {cls.__name__: cls for cls in (StandardScaler, MinMaxScaler, MLPRegressor, ECC)}


ESTIMATOR_CLASSES = ("StandardScaler", "MinMaxScaler", "MLPRegressor", "ECC")
"""Estimators written inside a router, by class name (the allow list of :func:`load_router`)."""
NETWORK_CLASSES = ("FactorisationNet", "BipartiteGraphNet")
"""Torch networks of :mod:`ecc_lib.routers.networks` written inside a router."""


def package_version() -> str:
    """The installed ecc_lib version (written into every router file).

    Returns
    -------
    str
    """
    from ecc_lib import __version__

    return str(__version__)


# --------------------------------------------------------------------------------------------
# Encoding a state tree
# --------------------------------------------------------------------------------------------


class _Encoder:
    """Turns a state value into a JSON tree, collecting its arrays under flat names."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, value: np.ndarray, where: str) -> dict:
        value = np.asarray(value)
        if value.dtype.hasobject:
            if all(isinstance(v, str) for v in value.reshape(-1)):
                return {"__strings__": self.array(value.astype(str), where), "object": True}
            raise RouterFileError(f"{where}: an object array cannot be written without pickle")
        key = f"a{len(self.arrays)}"
        self.arrays[key] = value
        return {"__array__": key}

    def value(self, value: Any, where: str) -> Any:
        from sklearn.neighbors import KNeighborsRegressor

        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, np.generic) and value.dtype.kind not in "biuf":
            raise RouterFileError(f"{where}: a {value.dtype} scalar cannot be written")
        if isinstance(value, (float, np.floating)) and not np.isfinite(value):
            return {"__float__": str(float(value))}  # nan, inf, -inf: not JSON numbers
        if isinstance(value, (int, float)) and not isinstance(value, np.generic):
            return value
        if isinstance(value, np.generic):
            return {"__scalar__": value.item(), "dtype": value.dtype.str}
        if isinstance(value, np.ndarray):
            return self.array(value, where)
        if isinstance(value, tuple):
            return {"__tuple__": [self.value(v, f"{where}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, list):
            return [self.value(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            if not all(isinstance(k, str) for k in value):
                raise RouterFileError(f"{where}: a mapping with non-string keys cannot be written")
            return {"__dict__": {k: self.value(v, f"{where}.{k}") for k, v in value.items()}}
        if isinstance(value, np.random.Generator):
            return {"__generator__": value.bit_generator.state}
        if isinstance(value, KNeighborsRegressor):
            return {
                "__knn__": {
                    "n_neighbors": int(value.n_neighbors),
                    "algorithm": value.algorithm,
                    "x": self.array(value._fit_X, f"{where}.x"),
                    "y": self.array(value._y, f"{where}.y"),
                }
            }
        if isinstance(value, BaseEstimator):
            name = type(value).__name__
            if name not in ESTIMATOR_CLASSES or not isinstance(value, _estimator_classes()[name]):
                raise RouterFileError(f"{where}: estimator {name} is not in {ESTIMATOR_CLASSES}")
            return {
                "__estimator__": name,
                "params": self.value(value.get_params(deep=False), f"{where}.params"),
                "state": self.value(_fitted_state(value), f"{where}.state"),
            }
        if type(value).__name__ in NETWORK_CLASSES:
            return {"__network__": type(value).__name__, **self.network(value, where)}
        raise RouterFileError(f"{where}: a {type(value).__name__} cannot be written without pickle")

    def network(self, net: Any, where: str) -> dict:
        from ecc_lib.routers import networks as nw

        if isinstance(net, nw.FactorisationNet):
            linear = isinstance(net.encoder, nw.nn.Parameter)
            n_features = net.encoder.shape[0] if linear else net.encoder[0].in_features
            kwargs = {
                "n_features": int(n_features),
                "n_columns": int(net.columns.shape[0]),
                "n_factors": int(net.columns.shape[1]),
                "hidden": None if linear else int(net.encoder[0].out_features),
                "groups": None
                if net.offset is None
                else self.array(net.onehot.argmax(dim=1).numpy(), f"{where}.groups"),
            }
        else:
            kwargs = {
                "n_features": int(net.query_in.in_features),
                "n_models": int(net.model_state.shape[0]),
                "n_edge_targets": int(net.n_edge_targets),
                "hidden": int(net.query_in.out_features),
                "n_rounds": len(net.model_update),
            }
        state = {
            name: self.array(tensor.detach().cpu().numpy(), f"{where}.{name}")
            for name, tensor in net.state_dict().items()
        }
        return {"kwargs": kwargs, "state": state}


def _fitted_state(obj: Any) -> dict[str, Any]:
    """Public fitted attributes of an estimator: names ending in ``_``, not starting with one."""
    return {k: v for k, v in vars(obj).items() if k.endswith("_") and not k.startswith("_")}


# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


class _Decoder:
    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.arrays = arrays

    def array(self, ref: dict) -> np.ndarray:
        if "__strings__" in ref:
            return self.array(ref["__strings__"]).astype(object)
        key = ref.get("__array__")
        if key not in self.arrays:
            raise RouterFileError(f"router.json refers to array {key!r}, missing from router.npz")
        return self.arrays[key]

    def value(self, node: Any, owner: Any = None) -> Any:
        if node is None or isinstance(node, (bool, str, int, float)):
            return node
        if isinstance(node, list):
            return [self.value(v) for v in node]
        if not isinstance(node, dict) or len(node) == 0:
            raise RouterFileError(f"router.json holds an unreadable node {str(node)[:80]!r}")
        tag = next(iter(node))
        if tag in ("__array__", "__strings__"):
            return self.array(node)
        if tag == "__float__":
            if node["__float__"] not in ("nan", "inf", "-inf"):
                raise RouterFileError(f"router.json holds a bad float {node['__float__']!r}")
            return float(node["__float__"])
        if tag == "__scalar__":
            dtype = np.dtype(str(node["dtype"]))
            if dtype.kind not in "biuf":
                raise RouterFileError(f"router.json holds a scalar of dtype {dtype}")
            return dtype.type(node["__scalar__"])
        if tag == "__tuple__":
            return tuple(self.value(v) for v in node["__tuple__"])
        if tag == "__dict__":
            return {k: self.value(v) for k, v in node["__dict__"].items()}
        if tag == "__generator__":
            state = node["__generator__"]
            name = state.get("bit_generator") if isinstance(state, dict) else None
            if name not in ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937"):
                raise RouterFileError(f"unknown bit generator {name!r} in router.json")
            bit_generator = getattr(np.random, name)()
            bit_generator.state = state
            return np.random.Generator(bit_generator)
        if tag == "__knn__":
            from sklearn.neighbors import KNeighborsRegressor

            from ecc_lib.routers.classic import inverse_distance_weights

            spec = node["__knn__"]
            eps = float(getattr(owner, "eps", 1e-6))
            return KNeighborsRegressor(
                n_neighbors=int(spec["n_neighbors"]),
                weights=partial(inverse_distance_weights, eps=eps),
                algorithm=str(spec["algorithm"]),
            ).fit(self.array(spec["x"]), self.array(spec["y"]))
        if tag == "__estimator__":
            name = node["__estimator__"]
            if name not in ESTIMATOR_CLASSES:
                raise RouterFileError(f"estimator {name!r} in router.json is not allowed")
            estimator = _estimator_classes()[name](**self.value(node["params"]))
            for key, value in self.value(node["state"]).items():
                setattr(estimator, key, value)
            return estimator
        if tag == "__network__":
            return self.network(node)
        raise RouterFileError(f"router.json holds an unknown node {tag!r}")

    def network(self, node: dict) -> Any:
        from ecc_lib.routers import networks as nw

        name = node["__network__"]
        kwargs = dict(node["kwargs"])
        generator = nw.torch_generator(0)  # weights are replaced by the saved ones
        if name == "FactorisationNet":
            groups = kwargs.pop("groups")
            net = nw.FactorisationNet(
                kwargs["n_features"],
                kwargs["n_columns"],
                kwargs["n_factors"],
                generator,
                None if groups is None else self.array(groups),
                hidden=kwargs["hidden"],
            )
        elif name == "BipartiteGraphNet":
            net = nw.BipartiteGraphNet(
                kwargs["n_features"],
                kwargs["n_models"],
                kwargs["n_edge_targets"],
                kwargs["hidden"],
                kwargs["n_rounds"],
                generator,
            )
        else:
            raise RouterFileError(f"network {name!r} in router.json is not allowed")
        state = {k: nw.torch.as_tensor(np.array(self.array(v))) for k, v in node["state"].items()}
        net.load_state_dict(state, strict=True)
        net.eval()
        return net


# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------


def router_state(router: base.Router) -> tuple[dict, dict[str, np.ndarray]]:
    """A fitted router as a JSON tree and its arrays.

    Parameters
    ----------
    router : Router
        A fitted router of a known family.

    Returns
    -------
    tree : dict
        ``{"class", "params", "state"}`` (JSON-ready; arrays are references).
    arrays : dict of str to ndarray
        The arrays, none of dtype object.
    """
    name = type(router).__name__
    if name not in _router_classes() or type(router) is not _router_classes()[name]:
        raise RouterFileError(f"{name} is not a known router family; cannot write it")
    if not hasattr(router, "fitted_target_"):
        raise RouterFileError(f"{name} is not fitted; fit it before saving")
    encoder = _Encoder()
    tree = {
        "class": name,
        "params": encoder.value(router.get_params(deep=False), "params"),
        "state": encoder.value(_fitted_state(router), "state"),
    }
    return tree, encoder.arrays


def router_from_state(tree: dict, arrays: dict[str, np.ndarray]) -> base.Router:
    """Rebuild a router from :func:`router_state`'s output.

    Parameters
    ----------
    tree : dict
        The JSON tree.
    arrays : dict of str to ndarray
        Its arrays.

    Returns
    -------
    Router
        Fitted, predicting as the saved one.
    """
    classes = _router_classes()
    name = tree.get("class")
    if name not in classes:
        raise RouterFileError(f"router class {name!r} is not a known family ({sorted(classes)})")
    decoder = _Decoder(arrays)
    router = classes[name](**decoder.value(tree["params"]))
    for key, node in tree["state"]["__dict__"].items():
        setattr(router, key, decoder.value(node, owner=router))
    return router


def save_router(router: base.Router, folder: str | Path, *, metadata: dict | None = None) -> Path:
    """Write a fitted router to ``folder`` (``router.npz`` and ``router.json``).

    Parameters
    ----------
    router : Router
        Fitted.
    folder : str or Path
        Created when missing; existing router files in it are replaced.
    metadata : dict, optional
        JSON-ready metadata stored beside the state (embedder, models, utility settings,
        training-data digest ...); the package version and the format are added.

    Returns
    -------
    Path
        The folder.
    """
    tree, arrays = router_state(router)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    document = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "ecc_lib_version": package_version(),
        "metadata": dict(metadata or {}),
        "router": tree,
    }
    text = json.dumps(document, indent=1, allow_nan=False)
    tmp_arrays = folder / f".{ARRAYS_FILE}.tmp.npz"
    np.savez(tmp_arrays, **arrays)
    tmp_arrays.replace(folder / ARRAYS_FILE)
    tmp_meta = folder / f".{META_FILE}.tmp"
    tmp_meta.write_text(text, encoding="utf-8")
    tmp_meta.replace(folder / META_FILE)
    return folder


def read_arrays(path: str | Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file, read with ``allow_pickle=False``.

    Parameters
    ----------
    path : str or Path
        The file.

    Returns
    -------
    dict of str to ndarray

    Raises
    ------
    RouterFileError
        The file holds an object array (which only pickle could read) or is not an ``.npz``.
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except ValueError as error:
        if "allow_pickle" in str(error) or "Object arrays" in str(error):
            raise RouterFileError(
                f"{path} holds an object array, which only pickle can read; refusing to load it"
            ) from None
        raise RouterFileError(f"{path} is not a readable .npz file: {error}") from None
    except (OSError, EOFError) as error:
        raise RouterFileError(f"{path} is not a readable .npz file: {error}") from None


def read_metadata(folder: str | Path) -> dict:
    """The ``router.json`` document of a router folder (checked format).

    Parameters
    ----------
    folder : str or Path
        A folder written by :func:`save_router`.

    Returns
    -------
    dict
    """
    path = Path(folder) / META_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{folder} holds no {META_FILE}: not a saved router")
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RouterFileError(f"{path} is not valid JSON: {error}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise RouterFileError(f"{path} is not an ecc_lib router file")
    if document.get("format_version") != FORMAT_VERSION:
        raise RouterFileError(
            f"{path} has format version {document.get('format_version')}; this ecc_lib reads "
            f"version {FORMAT_VERSION}"
        )
    return document


def check_compatible(
    document: dict, *, embedder: str | None = None, strict_version: bool = False
) -> None:
    """Refuse another embedder than recorded; warn (or refuse) on another package version.

    Parameters
    ----------
    document : dict
        :func:`read_metadata`'s output.
    embedder : str, optional
        The embedder the caller will use; compared by canonical name.
    strict_version : bool, default False
        Refuse, rather than warn, when the file was written by another ecc_lib version.
    """
    from ecc_lib.embed.models import canonical_model_name

    recorded = document.get("metadata", {}).get("embedder")
    if embedder is not None and recorded is not None:
        if canonical_model_name(embedder) != canonical_model_name(recorded):
            raise RouterFileError(
                f"the router was trained on {canonical_model_name(recorded)} embeddings; "
                f"{canonical_model_name(embedder)} embeddings would give meaningless routes"
            )
    version = document.get("ecc_lib_version")
    if version != package_version():
        message = (
            f"the router was written by ecc_lib {version}, this is {package_version()}: the "
            "families' predictions may differ; retrain to be sure"
        )
        if strict_version:
            raise RouterFileError(message)
        warnings.warn(message, UserWarning, stacklevel=3)


def load_router(
    folder: str | Path, *, embedder: str | None = None, strict_version: bool = False
) -> tuple[base.Router, dict]:
    """Read a router written by :func:`save_router`.

    Parameters
    ----------
    folder : str or Path
        The router folder.
    embedder : str, optional
        The embedder the caller will use: refused when it is not the recorded one.
    strict_version : bool, default False
        Refuse a file written by another ecc_lib version (default: warn).

    Returns
    -------
    router : Router
        Fitted.
    metadata : dict
        The stored metadata, with ``ecc_lib_version`` added.
    """
    document = read_metadata(folder)
    check_compatible(document, embedder=embedder, strict_version=strict_version)
    arrays = read_arrays(Path(folder) / ARRAYS_FILE)
    router = router_from_state(document["router"], arrays)
    metadata = dict(document.get("metadata", {}))
    metadata["ecc_lib_version"] = document.get("ecc_lib_version")
    return router, metadata


__all__: list[str] = []
