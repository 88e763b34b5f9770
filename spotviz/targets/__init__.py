from .base import DiffusionTarget, ForwardOutput, PrefixCache, TargetInfo
from .embedded import EmbeddedTarget
