from .common import DecodeConfig, DecodeError, Progress
from .standard import decode_standard, decode_standard_stream
