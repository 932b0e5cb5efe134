// Compiled into every layer library so that a layer whose folder has no source yet (headers
// only) still forms a valid static library.
namespace sixfold::detail {
[[maybe_unused]] static int layer_anchor = 0;
}
