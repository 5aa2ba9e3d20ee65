#include "core/routing/index_updates.h"

namespace warmroute::routing {

void IndexUpdates::ApplyTo(PrefixIndex& index, BackendId backend) const {
  for (const Op& op : ops_) {
    switch (op.kind) {
      case Kind::kInsert:
        index.Insert(backend, hashes(op));
        break;
      case Kind::kRemove:
        index.Remove(backend, hashes(op));
        break;
      case Kind::kClear:
        index.Clear(backend);
        break;
    }
  }
}

}  // namespace warmroute::routing
