"""Stand-in for ``torchvision``'s MNIST (added by polyaxon-prefect's tests, not upstream).

The example downloads MNIST (60,000 images) through ``torchvision.datasets.MNIST``; the tests
run it offline in seconds, so its import line reads ``datasets``/``transforms`` from here
instead: the same call shapes, a small deterministic data set of 1x28x28 images whose label is
the brightest of ten horizontal bands (learnable, so the accuracy means something).
"""

import types

import torch
from torch.utils.data import TensorDataset


def _mnist(root=None, train=True, download=False, transform=None, target_transform=None):
    generator = torch.Generator().manual_seed(0 if train else 1)
    count = 512 if train else 256
    labels = torch.randint(0, 10, (count,), generator=generator)
    images = torch.rand(count, 1, 28, 28, generator=generator) * 0.5
    for index, label in enumerate(labels.tolist()):
        images[index, 0, 2 + 2 * label : 4 + 2 * label, :] += 0.5
    return TensorDataset(images, labels)


def _identity(*args, **kwargs):
    return lambda value: value


datasets = types.SimpleNamespace(MNIST=_mnist)
transforms = types.SimpleNamespace(Compose=_identity, ToTensor=_identity, Normalize=_identity)
