"""The default task: a generated multi-label classification problem (:class:`Task`,
:func:`make_task`) and the checks that bound what training will allocate."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checks import check_float32, check_int

# What training allocates follows from the task's sizes: arrays of at most this many values
# (256 MiB of FP32 each) and at most this many hidden layers. Larger tasks are refused before
# anything is allocated.
TASK_LIMITS = {"max_values": 2**26, "max_depth": 1024}
EVAL_ROWS = 4096  # training examples the final training loss is measured on


@dataclass(frozen=True)
class Task:
    """A generated multi-label classification problem and the network trained on it.

    Checked on construction: 2-D data with matching rows and columns (``widths[0]`` features,
    ``widths[-1]`` labels), finite FP32 values (the arrays are stored as FP32), labels in
    [0, 1], ``1 <= batch_size <= len(x_train)``, a finite FP32 ``lr >= 0`` and ``momentum >= 0``
    (torch's rules), and sizes within :data:`TASK_LIMITS`.
    """

    x_train: np.ndarray
    y_train: np.ndarray  # 0/1 labels, float32, one column per label
    x_test: np.ndarray
    y_test: np.ndarray
    widths: tuple[int, ...]  # layer widths, input first, labels last
    batch_size: int
    lr: float
    optimizer: str = "sgd"
    momentum: float = 0.9
    description: str = ""  # the task in words, for the table's title

    def __post_init__(self) -> None:
        for name in ("x_train", "y_train", "x_test", "y_test"):
            object.__setattr__(self, name, _data_array(name, getattr(self, name)))
        object.__setattr__(self, "widths", check_widths(self.widths))
        self._check_shapes()
        batch, lr, momentum = _check_training(len(self.x_train), self.batch_size, self.lr, self.optimizer, self.momentum)
        object.__setattr__(self, "batch_size", batch)
        object.__setattr__(self, "lr", lr)
        object.__setattr__(self, "momentum", momentum)
        _check_network_size(self.widths, batch, len(self.x_train), len(self.x_test))

    def _check_shapes(self) -> None:
        n_in, n_out = self.widths[0], self.widths[-1]
        for x, y, part in ((self.x_train, self.y_train, "train"), (self.x_test, self.y_test, "test")):
            if x.shape[0] != y.shape[0]:
                raise ValueError(f"x_{part} has {x.shape[0]} rows but y_{part} has {y.shape[0]}")
            if x.shape[1] != n_in or y.shape[1] != n_out:
                raise ValueError(
                    f"x_{part} and y_{part} must have widths[0] = {n_in} and widths[-1] = {n_out} "
                    f"columns, got {x.shape[1]} and {y.shape[1]}"
                )
        if np.any((self.y_train < 0) | (self.y_train > 1)) or np.any((self.y_test < 0) | (self.y_test > 1)):
            raise ValueError("labels (y_train, y_test) must lie in [0, 1]")


def _data_array(name: str, value: object) -> np.ndarray:
    """A 2-D array of finite FP32 values with at least one row."""
    try:
        arr = np.asarray(value)
    except ValueError:
        raise ValueError(f"{name} must be a 2-D array of numbers") from None
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be a 2-D array of real numbers, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ValueError(f"{name} must be a 2-D array with at least one row, got shape {arr.shape}")
    with np.errstate(over="ignore"):  # beyond FP32's range: Inf, refused just below
        arr = np.asarray(arr, dtype=np.float32)
    bad = int(np.count_nonzero(~np.isfinite(arr)))
    if bad:
        raise ValueError(f"{name} has {bad} values that are NaN, Inf or beyond float32's range")
    return arr


def check_widths(widths: object) -> tuple[int, ...]:
    if not isinstance(widths, (tuple, list)) or len(widths) < 2:
        raise TypeError(f"widths must be a tuple of at least two layer widths, got {widths!r}")
    out = tuple(check_int("every width", w, 1) for w in widths)
    if len(out) - 2 > TASK_LIMITS["max_depth"]:
        raise ValueError(f"at most {TASK_LIMITS['max_depth']} hidden layers, got {len(out) - 2}")
    return out


def _check_training(n_train: int, batch_size: object, lr: object, optimizer: object, momentum: object) -> tuple[int, float, float]:
    """batch_size, lr and momentum checked (torch.optim's rules, in FP32), the optimizer name."""
    batch = check_int("batch_size", batch_size, 1)
    if batch > n_train:
        raise ValueError(f"batch_size ({batch}) cannot exceed the {n_train} training examples")
    finite_nonneg = lambda v: bool(np.isfinite(v) and v >= 0)  # noqa: E731
    check_float32("lr", lr, finite_nonneg, "a finite float32 number >= 0")
    check_float32("momentum", momentum, finite_nonneg, "a finite float32 number >= 0")
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be 'sgd' or 'adam', got {optimizer!r}")
    return batch, float(lr), float(momentum)  # as given; the optimizer rounds them to FP32


def _check_network_size(widths: tuple[int, ...], batch_size: int, n_train: int, n_test: int) -> None:
    """Weights, and the activations of a batch or an evaluation, within TASK_LIMITS."""
    limit = TASK_LIMITS["max_values"]
    check_weight_count(widths)
    rows = max(batch_size, min(n_train, EVAL_ROWS), n_test)
    if rows * sum(widths) > limit:
        raise ValueError(
            f"{rows} examples through layers of widths {sum(widths)} in all would need "
            f"{rows * sum(widths)} activations; the limit is {limit} (2**26)"
        )


def check_weight_count(widths: tuple[int, ...]) -> None:
    limit = TASK_LIMITS["max_values"]
    weights = sum(a * b for a, b in zip(widths[:-1], widths[1:]))
    if weights > limit:
        raise ValueError(f"the network would have {weights} weights; the limit is {limit} (2**26)")


def make_task(
    seed: int = 0,
    *,
    n_features: int = 32,
    n_clusters: int = 16,
    n_labels: int = 1024,
    noise: float = 0.5,
    hidden: int = 64,
    depth: int = 2,
    n_train: int = 8192,
    n_test: int = 4096,
    batch_size: int = 256,
    lr: float = 16.0,
    optimizer: str = "sgd",
    momentum: float = 0.9,
) -> Task:
    """The default task: multi-label classification of Gaussian clusters.

    ``n_clusters`` centres are drawn from N(0, I) in ``n_features`` dimensions, each with its
    own random code of ``n_labels`` bits; an example is a centre plus ``noise * N(0, I)`` and its
    labels are its centre's code. The loss is the mean over ``batch_size * n_labels`` = 2**18
    outputs, so each output's gradient starts near 2**-19, and the task can be fitted almost
    perfectly, so the gradients keep shrinking: past FP16's smallest subnormal, 2**-24, early
    in training. (The earlier default, whose 2**17 outputs FP16 harmed less:
    ``make_task(n_clusters=64, n_labels=128, depth=4, n_train=16384, batch_size=1024, lr=2.0)``.)
    Every size is a positive integer (``depth``, the number of hidden layers, may be 0) and the
    arrays they imply are bounded by :data:`TASK_LIMITS`: nonsense is refused before any data
    is drawn.

    >>> t = make_task(0)
    >>> t.x_train.shape, t.y_train.shape, t.widths
    ((8192, 32), (8192, 1024), (32, 64, 64, 1024))
    """
    seed = check_int("seed", seed, 0)
    sizes = {k: check_int(k, v, 1) for k, v in dict(
        n_features=n_features, n_clusters=n_clusters, n_labels=n_labels, hidden=hidden, n_train=n_train, n_test=n_test
    ).items()}
    depth = check_int("depth", depth, 0, TASK_LIMITS["max_depth"])
    check_float32("noise", noise, lambda v: bool(np.isfinite(v) and v >= 0), "a finite float32 number >= 0")
    batch_size, _, _ = _check_training(n_train, batch_size, lr, optimizer, momentum)
    _check_data_size(**sizes)
    widths = (n_features,) + (hidden,) * depth + (n_labels,)
    _check_network_size(widths, batch_size, n_train, n_test)
    rng = np.random.default_rng([seed, 0x7A5C])
    n = n_train + n_test
    centres = rng.standard_normal((n_clusters, n_features))
    codes = rng.integers(0, 2, (n_clusters, n_labels)).astype(np.float32)
    cluster = rng.integers(0, n_clusters, n)
    with np.errstate(over="ignore"):  # a huge noise overflows FP32: refused just below
        x = (centres[cluster] + float(noise) * rng.standard_normal((n, n_features))).astype(np.float32)
    if not np.isfinite(x).all():
        raise ValueError(f"noise = {noise!r} puts examples beyond float32's range (about 3.4e38)")
    y = codes[cluster]
    return Task(
        x_train=x[:n_train],
        y_train=y[:n_train],
        x_test=x[n_train:],
        y_test=y[n_train:],
        widths=widths,
        batch_size=batch_size,
        lr=lr,
        optimizer=optimizer,
        momentum=momentum,
        description=_describe(widths, n_clusters, n_labels, optimizer, lr, batch_size),
    )


def _describe(widths: tuple[int, ...], n_clusters: int, n_labels: int, optimizer: str, lr: float, batch: int) -> str:
    """The generated task in words.

    >>> _describe((32, 64, 128), 64, 128, "sgd", 2.0, 1024)
    'an MLP 32-64-128 learns the 128-bit codes of 64 noisy Gaussian clusters (SGD, lr 2, batch 1024)'
    """
    shape = "-".join(map(str, widths))
    return (f"an MLP {shape} learns the {n_labels}-bit codes of {n_clusters} noisy Gaussian clusters "
            f"({optimizer.upper() if optimizer == 'sgd' else optimizer.capitalize()}, lr {lr:g}, batch {batch})")


def _check_data_size(*, n_features: int, n_clusters: int, n_labels: int, n_train: int, n_test: int, **_) -> None:
    """The generated arrays (examples and cluster tables) within TASK_LIMITS."""
    limit = TASK_LIMITS["max_values"]
    for rows, what in ((n_train + n_test, "(n_train + n_test)"), (n_clusters, "n_clusters")):
        values = rows * (n_features + n_labels)
        if values > limit:
            raise ValueError(
                f"the task would hold {what} x (n_features + n_labels) = {values} values; "
                f"the limit is {limit} (2**26)"
            )
