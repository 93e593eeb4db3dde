import Kernels.Layernorm
