"""What the families that measure ResNet-50 (conv, train, train_dp) and those that judge against it
(nccl: the gradient all-reduce; hostlink: the images a training step consumes) share: the model's
constants and the point of a batch sweep. No family module itself (no ``FAMILY``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..records import Where

# ResNet-50 (torchvision): 25,557,032 parameters; FP32 gradients are all-reduced in data parallel.
RESNET50_PARAMS = 25_557_032
RESNET50_GRAD_BYTES = RESNET50_PARAMS * 4
# One 224x224 RGB input image as an FP32 tensor, as a typical data loader sends it to the GPU.
IMAGE_BYTES = 3 * 224 * 224 * 4


@dataclass
class BatchPoint:
    """One batch of a sweep: where it ran, its precision and layout, the batch, its status and
    whether it was skipped for memory."""
    where: Where
    precision: str
    layout: str
    batch: int
    status: str
    oom: bool
