from .config import DecodeConfig, DecodeError
from .state import Progress
from .standard import decode_standard, decode_standard_stream
