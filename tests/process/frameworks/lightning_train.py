"""A Lightning fit logging through Polyaxon's logger (`PolyaxonCallback`)."""

import lightning.pytorch as pl
import torch
from polyaxon.tracking.contrib.pytorch_lightning import PolyaxonCallback
from torch.utils.data import DataLoader, TensorDataset


class Model(pl.LightningModule):
    def __init__(self, lr: float = 0.1) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, index):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x).squeeze(-1), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


torch.manual_seed(0)
x = torch.rand(64, 4)
trainer = pl.Trainer(
    max_epochs=2,
    logger=PolyaxonCallback(),
    log_every_n_steps=2,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    accelerator="cpu",
)
trainer.fit(Model(), DataLoader(TensorDataset(x, x.sum(1)), batch_size=16))
