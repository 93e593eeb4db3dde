import Kernels.PipelineDb
