import Kernels.MatmulDb
