"""A Keras 3 fit with Polyaxon's callbacks, v1 (`PolyaxonCallback`) and v0 (`PolyaxonKeras`)."""

import keras
import numpy as np
from polyaxon import tracking
from polyaxon.tracking.contrib.keras import PolyaxonCallback
from polyaxon_client.tracking.contrib.keras import PolyaxonKeras

tracking.init()
rng = np.random.default_rng(0)
x = rng.random((64, 4), dtype="float32")
y = (x.sum(1) > 2).astype("float32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"])
model.fit(
    x,
    y,
    epochs=3,
    batch_size=16,
    validation_split=0.25,
    verbose=0,
    callbacks=[PolyaxonCallback(), PolyaxonKeras(metrics=["loss"])],
)
