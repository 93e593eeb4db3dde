import Kernels.IfElseSplit
