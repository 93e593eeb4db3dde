import Kernels.DmaTrigger
