// The interpreter's memory model (reference/SEMANTICS.md S5.5): which write a read sees.
//
// Every write gives its buffer a new version. Each point of an evaluation carries a Clock, the
// version of every written buffer it is ordered after (a vector clock). A read sees the buffer at
// its clock's version, so a read that is not ordered after a write sees the contents before it,
// whatever the order in which the interpreter happens to reach the two. A write must be ordered
// after the buffer's latest write (two unordered writes are a race, an error) and advances the
// writer's clock.
//
// Older versions are kept only while something may still read them:
//  - a live clock (the parent of a fork, a parallel loop's start) may have Values on the C++
//    stack that view the storage, so a write the version is still live for goes to a copy;
//  - a record (an effect's completion, kept so later nodes can be ordered after the effect) holds
//    no Value: the write is made in place and the overwritten region saved first (an undo
//    entry), from which the old version is rebuilt if a read ever asks for it.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "interp/value.h"
#include "uop/uop.h"

namespace ow::interp {

using Version = uint64_t;
class Memory;

// A vector clock over the written buffers of one evaluation. Copies keep their versions alive.
class Clock {
 public:
  enum class Kind : uint8_t { Live, Record };
  Clock() = default;
  Clock(Memory& m, Kind kind);
  Clock(const Clock& o);
  Clock& operator=(const Clock& o);
  ~Clock();

  Version at(size_t b) const { return v_[b]; }
  void set(size_t b, Version v);
  void merge(const Clock& o);                // pointwise latest: ordered after both
  Clock as(Kind kind) const;                 // the same versions, counted as another kind
  Clock snapshot() const;                    // the same versions, keeping nothing alive (to compare with)
  // A record of this clock that keeps alive only what `since` does not see (the effect's own
  // writes); the rest of it orders later nodes but keeps nothing.
  Clock record_since(const Clock& since) const;
  bool operator==(const Clock& o) const { return v_ == o.v_; }
  bool operator!=(const Clock& o) const { return v_ != o.v_; }
  bool null() const { return mem_ == nullptr; }

 private:
  Memory* mem_ = nullptr;
  Kind kind_ = Kind::Live;
  std::vector<Version> v_;
  std::vector<bool> counted_;  // which entries hold a reference
  void hold(bool on);
};

class Memory {
 public:
  using Describe = std::function<std::string(UOp)>;
  explicit Memory(Describe describe) : describe_(std::move(describe)) {}

  // A buffer the graph writes; `live` is the caller's storage, updated in place.
  size_t add(const std::string& name, BufferData* live);
  size_t size() const { return slots_.size(); }
  const std::string& name(size_t b) const { return slots_[b].name; }
  Version latest(size_t b) const { return slots_[b].latest; }

  // The contents at version v: the live storage when v is the latest, else a kept copy (rebuilt
  // from undo entries when needed). Throws InternalError if v can no longer be rebuilt.
  const BufferData& contents(size_t b, Version v);
  // Does v share storage with any version of buffer b (so it changes if b is written in place)?
  bool aliases(size_t b, const Value& v) const;

  // Prepares the write of `region` (a view of the buffer's flat contents) by `node` at `writer`:
  // checks the order, keeps what older versions still need, and advances `writer`. Returns the
  // live contents to write into. Throws ow::Error for a race, unless `cache`: the buffer holds
  // a realized value whoever needs it recomputes (a value KERNEL's temporary).
  BufferData& begin_write(size_t b, Clock& writer, const View& region, UOp node, bool cache = false);

 private:
  friend class Clock;
  struct Undo {
    Version before, after;   // undoing the write that made `after` restores `before`
    View region;
    StoragePtr data, poison; // the region's contents at `before` (poison null: the region was clean)
  };
  struct Slot {
    std::string name;
    BufferData* live;
    Version latest = 0;
    UOp last_writer;
    std::map<Version, std::array<int, 2>> refs;  // live and record references per version
    std::map<Version, BufferData> kept;          // copies of older versions
    std::vector<Undo> undo;                      // oldest first
  };
  std::vector<Slot> slots_;
  Describe describe_;
  Version next_version_ = 1;

  void ref(size_t b, Version v, Clock::Kind k, int delta);
  void forget(Slot& s);  // drops kept versions and undo entries nothing refers to
  BufferData rebuild(Slot& s, Version v);
};

}  // namespace ow::interp
