#include "models/rank_mesh.hpp"

#include <algorithm>

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

long expert_stride(const Layout& l, ExpertAxis axis) {
  switch (axis) {
    case ExpertAxis::ETP: return 1;
    case ExpertAxis::EP: return l.etp;
    case ExpertAxis::EDP: return long(l.etp) * l.ep;
  }
  return 1;
}

int expert_data_size(const Layout& l) { return std::max(1, l.tp * l.cp * l.dp / std::max(1, l.ep * l.etp)); }

ExpertCoordinates expert_coordinates(const Layout& l, int r) {
  const long local = r % mesh_stride(l, MeshAxis::PP);
  ExpertCoordinates e;
  e.etp = int(local % l.etp);
  e.ep = int((local / expert_stride(l, ExpertAxis::EP)) % l.ep);
  e.edp = int(local / expert_stride(l, ExpertAxis::EDP));
  return e;
}

int world_rank_of(const Layout& l, const RankCoordinates& c) {
  return int(c.tp + mesh_stride(l, MeshAxis::CP) * c.cp + mesh_stride(l, MeshAxis::DP) * c.dp +
             mesh_stride(l, MeshAxis::PP) * c.pp);
}

}  // namespace sixfold
