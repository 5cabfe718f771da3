// Stand-in for cuda_fp16.h (make cuda-syntax): the declarations are in cuda_runtime.h here.
#pragma once
#include "cuda_runtime.h"
