#include "models/rank_mesh.hpp"

namespace sixfold {

long mesh_stride(const Layout& l, MeshAxis axis) {
  switch (axis) {
    case MeshAxis::TP: return 1;
    case MeshAxis::CP: return l.tp;
    case MeshAxis::DP: return long(l.tp) * l.cp;
    case MeshAxis::PP: return long(l.tp) * l.cp * l.dp;
  }
  return 1;
}

RankCoordinates rank_coordinates(const Layout& l, int r) {
  RankCoordinates c;
  c.tp = r % l.tp;
  c.cp = int((r / mesh_stride(l, MeshAxis::CP)) % l.cp);
  c.dp = int((r / mesh_stride(l, MeshAxis::DP)) % l.dp);
  c.pp = int(r / mesh_stride(l, MeshAxis::PP));
  return c;
}

int world_rank_of(const Layout& l, const RankCoordinates& c) {
  return int(c.tp + mesh_stride(l, MeshAxis::CP) * c.cp + mesh_stride(l, MeshAxis::DP) * c.dp +
             mesh_stride(l, MeshAxis::PP) * c.pp);
}

}  // namespace sixfold
