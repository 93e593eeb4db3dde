import Kernels.TinyPipe
