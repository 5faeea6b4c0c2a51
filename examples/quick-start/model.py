"""Train a small classifier with numpy, for the quick-start examples.

A one-hidden-layer network learns a seeded "two moons" dataset (2,000 points, 2 classes). Every
input changes the result: ``learning_rate`` and ``epochs`` drive SGD, ``dropout`` is applied to
the hidden layer while training, and ``conv_activation`` picks the hidden activation (the name
is kept from Polyaxon's quick-start, where the model was a CNN). It finishes in about a second.

Metrics are logged per epoch and the final loss and accuracy (on a held-out split) as outputs,
with `polyaxon_prefect.tracking`.
"""

from __future__ import annotations

import argparse

import numpy as np

from polyaxon_prefect import tracking

HIDDEN = 32
BATCH = 32
SEED = 7


def two_moons(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    half = n // 2
    angles = rng.uniform(0.0, np.pi, size=n)
    upper = np.stack([np.cos(angles[:half]), np.sin(angles[:half])], axis=1)
    lower = np.stack([1.0 - np.cos(angles[half:]), 0.5 - np.sin(angles[half:])], axis=1)
    x = np.concatenate([upper, lower]) + rng.normal(scale=0.15, size=(n, 2))
    y = np.concatenate([np.zeros(half), np.ones(n - half)])
    order = rng.permutation(n)
    return (x[order] - x.mean(axis=0)) / x.std(axis=0), y[order]


ACTIVATIONS = {
    "relu": (lambda z: np.maximum(z, 0.0), lambda z, a: (z > 0).astype(z.dtype)),
    "sigmoid": (lambda z: 1.0 / (1.0 + np.exp(-z)), lambda z, a: a * (1.0 - a)),
    "tanh": (np.tanh, lambda z, a: 1.0 - a**2),
}


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def bce(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def train(
    learning_rate: float, dropout: float, activation: str, epochs: int
) -> tuple[float, float]:
    rng = np.random.default_rng(SEED)
    x, y = two_moons(2000, rng)
    x_train, y_train, x_test, y_test = x[:1600], y[:1600], x[1600:], y[1600:]
    act, act_grad = ACTIVATIONS[activation]
    w1 = rng.normal(scale=1.0 / np.sqrt(2), size=(2, HIDDEN))
    b1 = np.zeros(HIDDEN)
    w2 = rng.normal(scale=1.0 / np.sqrt(HIDDEN), size=(HIDDEN, 1))
    b2 = np.zeros(1)
    keep = 1.0 - dropout

    def predict(inputs: np.ndarray) -> np.ndarray:
        return sigmoid(act(inputs @ w1 + b1) @ w2 + b2)[:, 0]

    loss = accuracy = float("nan")
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(x_train))
        for start in range(0, len(order), BATCH):
            idx = order[start : start + BATCH]
            xb, yb = x_train[idx], y_train[idx]
            z1 = xb @ w1 + b1
            a1 = act(z1)
            mask = (rng.random(a1.shape) < keep) / keep if dropout > 0 else 1.0
            h = a1 * mask
            p = sigmoid(h @ w2 + b2)[:, 0]
            grad_out = ((p - yb) / len(idx))[:, None]
            grad_h = grad_out @ w2.T * mask * act_grad(z1, a1)
            w2 -= learning_rate * h.T @ grad_out
            b2 -= learning_rate * grad_out.sum(axis=0)
            w1 -= learning_rate * xb.T @ grad_h
            b1 -= learning_rate * grad_h.sum(axis=0)
        p_test = predict(x_test)
        loss = bce(p_test, y_test)
        accuracy = float(np.mean((p_test > 0.5) == y_test))
        tracking.log_metrics(step=epoch, loss=loss, accuracy=accuracy)
        print(f"epoch {epoch}/{epochs}: loss={loss:.4f} accuracy={accuracy:.4f}", flush=True)
    return loss, accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learning_rate", type=float, default=0.01)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--conv_activation", choices=sorted(ACTIVATIONS), default="relu")
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()
    if not 0.0 <= args.dropout < 1.0:
        parser.error(f"--dropout must be in [0, 1), got {args.dropout}")
    if args.epochs < 1:
        parser.error(f"--epochs must be at least 1, got {args.epochs}")
    loss, accuracy = train(args.learning_rate, args.dropout, args.conv_activation, args.epochs)
    tracking.log_outputs(loss=loss, accuracy=accuracy)


if __name__ == "__main__":
    main()
