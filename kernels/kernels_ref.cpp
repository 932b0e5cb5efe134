// Explicit instantiations of the CPU reference kernels for float and double: every template is
// compiled once here (catching errors early for both precisions) and the library always has a
// translation unit even in builds without CUDA.
#include "kernels/activation_ref.hpp"
#include "kernels/adamw_ref.hpp"
#include "kernels/attention_ref.hpp"
#include "kernels/cross_entropy_ref.hpp"
#include "kernels/moe_ref.hpp"
#include "kernels/norm_ref.hpp"
#include "kernels/rope_ref.hpp"

namespace sixfold {

#define SIXFOLD_INSTANTIATE_REF(T)                                                                                \
  template void rmsnorm_forward_ref<T>(const T*, const T*, T*, T*, int, int, T);                               \
  template void rmsnorm_backward_ref<T>(const T*, const T*, const T*, const T*, T*, T*, int, int);             \
  template void layernorm_forward_ref<T>(const T*, const T*, const T*, T*, T*, T*, int, int, T);               \
  template void layernorm_backward_ref<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, int, int); \
  template void rope_forward_ref<T>(const T*, T*, const int*, int, int, int, int, double);                     \
  template void rope_backward_ref<T>(const T*, T*, const int*, int, int, int, int, double);                    \
  template void swiglu_forward_ref<T>(const T*, const T*, T*, long);                                           \
  template void swiglu_backward_ref<T>(const T*, const T*, const T*, T*, T*, long);                            \
  template void gelu_forward_ref<T>(const T*, T*, long);                                                       \
  template void gelu_backward_ref<T>(const T*, const T*, T*, long);                                            \
  template void squared_relu_forward_ref<T>(const T*, T*, long);                                               \
  template void squared_relu_backward_ref<T>(const T*, const T*, T*, long);                                    \
  template void logits_rowmax_ref<T>(const T*, T*, int, int);                                                  \
  template void logits_sumexp_ref<T>(const T*, const T*, T*, int, int);                                        \
  template void target_logit_ref<T>(const T*, const int*, int, T*, int, int);                                  \
  template void cross_entropy_backward_ref<T>(const T*, const T*, const T*, const int*, int, T, T*, int, int); \
  template void attention_forward_ref<T>(const T*, const T*, const T*, T*, T*, const int*, const int*, int, int, \
                                         int, int, int, T);                                                    \
  template void attention_backward_ref<T>(const T*, const T*, const T*, const T*, const T*, const T*, T*, T*, T*, \
                                          const int*, const int*, int, int, int, int, int, T);                 \
  template void merge_attention_partial_ref<T>(T*, T*, const T*, const T*, int, int, int);                     \
  template void topk_router_ref<T>(const T*, int, int, int, int*, T*);                                         \
  template void topk_router_backward_ref<T>(const T*, const int*, const T*, T*, int, int, int);                \
  template void adamw_ref<T>(T*, const T*, T*, T*, long, double, double, double, double, double, long);

SIXFOLD_INSTANTIATE_REF(float)
SIXFOLD_INSTANTIATE_REF(double)

#undef SIXFOLD_INSTANTIATE_REF

}  // namespace sixfold
