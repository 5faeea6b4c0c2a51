"""TensorBoard events written where Polyaxon's docs say: the run's tensorboard/outputs path."""

from polyaxon import tracking
from torch.utils.tensorboard import SummaryWriter

tracking.init()
writer = SummaryWriter(tracking.get_tensorboard_path())
for step in range(3):
    writer.add_scalar("loss", 1.0 / (step + 1), step)
writer.close()
writer = SummaryWriter(tracking.get_outputs_path("eval"))
writer.add_scalar("accuracy", 0.5, 0)
writer.close()
