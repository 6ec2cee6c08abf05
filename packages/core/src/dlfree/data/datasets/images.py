"""What the image datasets share: uint8 images and int labels given out as float items."""

from __future__ import annotations

import numpy as np

from ..dataset import Dataset


class LabelledImages(Dataset):
    """A subclass sets `data` (uint8 images, (N, H, W) or (N, C, H, W)), `targets` (int
    labels), `transform` and `target_transform`. An item is `(image, label)`: the image a
    float32 array with a channel dim, divided by `pixel_max` into [0, 1], and the label an
    int, each passed through its transform when given."""

    pixel_max = 255

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int):
        image = self.data[index].astype(np.float32) / self.pixel_max
        if image.ndim == 2:  # one channel, stored without its dim
            image = image[None]
        label = int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            label = self.target_transform(label)
        return image, label
