"""Reference models written by hand (torchvision is not a dependency), shared by several test files.

* :func:`resnet50` — ResNet-50 v1.5 (stride on the 3x3 conv of each bottleneck, as torchvision):
  4.09 G multiply-adds for convs + fc at 1x3x224x224, i.e. ~8.2 GFLOPs.
* :class:`SmallCNN` — conv/bn/relu/pool/linear, a few hundred kFLOPs; ONNX cross-checks and measured points.
* :class:`TransformerBlock` — pre-norm block: LayerNorm, fused QKV Linear, SDPA, out Linear, GELU MLP.
* :func:`linear_stack` — Linear layers with ReLU, for the training = 3 x inference check.

Each ``make_*`` returns ``(model, inputs)``; pass ``device="meta"`` to trace without allocating.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_ch: int, width: int, stride: int = 1) -> None:
        super().__init__()
        out_ch = width * self.expansion
        self.conv1 = nn.Conv2d(in_ch, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_ch, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_ch)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_ch != out_ch:
            self.downsample = nn.Sequential(nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(out_ch))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, layers: tuple[int, ...] = (3, 4, 6, 3), num_classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        in_ch = 64
        stages = []
        for i, (blocks, width) in enumerate(zip(layers, (64, 128, 256, 512), strict=False)):
            stage = []
            for b in range(blocks):
                stage.append(Bottleneck(in_ch, width, stride=2 if (b == 0 and i > 0) else 1))
                in_ch = width * Bottleneck.expansion
            stages.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(in_ch, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet50(batch: int = 1, device: str = "meta") -> tuple[nn.Module, tuple[torch.Tensor]]:
    with torch.device(device):
        return ResNet().eval(), (torch.empty(batch, 3, 224, 224),)


class SmallCNN(nn.Module):
    """1x3x32x32 -> 10 logits."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(16 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


def small_cnn(batch: int = 1, device: str = "meta") -> tuple[nn.Module, tuple[torch.Tensor]]:
    with torch.device(device):
        return SmallCNN().eval(), (torch.empty(batch, 3, 32, 32),)


class TransformerBlock(nn.Module):
    """Pre-norm decoder block (causal SDPA); input (batch, seq, dim)."""

    def __init__(self, dim: int = 64, heads: int = 4, mlp_ratio: int = 4, causal: bool = True) -> None:
        super().__init__()
        self.heads, self.causal = heads, causal
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, mlp_ratio * dim)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(mlp_ratio * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


def transformer_block(batch: int = 2, seq: int = 16, dim: int = 64, heads: int = 4,
                      device: str = "meta") -> tuple[nn.Module, tuple[torch.Tensor]]:
    with torch.device(device):
        return TransformerBlock(dim, heads).eval(), (torch.empty(batch, seq, dim),)


def linear_stack(width: int = 256, depth: int = 4, batch: int = 64,
                 device: str = "meta") -> tuple[nn.Module, tuple[torch.Tensor]]:
    with torch.device(device):
        layers: list[nn.Module] = []
        for _ in range(depth):
            layers += [nn.Linear(width, width), nn.ReLU()]
        return nn.Sequential(*layers[:-1]), (torch.empty(batch, width),)


def make_resnet50() -> tuple[nn.Module, tuple[torch.Tensor]]:
    """CLI entry point: ``roofline torch tests/models.py:make_resnet50``."""
    return resnet50()


def make_small_cnn() -> nn.Module:
    """CLI entry point returning a module only (inputs come from --input)."""
    return SmallCNN()
