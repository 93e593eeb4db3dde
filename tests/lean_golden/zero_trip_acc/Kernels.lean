import Kernels.ZeroTripAcc
