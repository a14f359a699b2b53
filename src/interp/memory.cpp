#include "interp/memory.h"

#include <algorithm>

#include "uop/error.h"

namespace ow::interp {

// ---------------- Clock ----------------

Clock::Clock(Memory& m, Kind kind) : mem_(&m), kind_(kind), v_(m.size(), 0), counted_(m.size(), false) { hold(true); }

Clock::Clock(const Clock& o) : mem_(o.mem_), kind_(o.kind_), v_(o.v_), counted_(o.counted_) {
  for (size_t b = 0; b < v_.size(); ++b)
    if (counted_[b]) mem_->ref(b, v_[b], kind_, +1);
}

Clock& Clock::operator=(const Clock& o) {
  if (this == &o) return *this;
  Clock copy(o);
  if (mem_) hold(false);
  std::swap(mem_, copy.mem_);
  std::swap(kind_, copy.kind_);
  std::swap(v_, copy.v_);
  std::swap(counted_, copy.counted_);
  return *this;
}

Clock::~Clock() {
  if (mem_) hold(false);
}

// Counts every entry (on) or releases every counted entry (off).
void Clock::hold(bool on) {
  for (size_t b = 0; b < v_.size(); ++b) {
    if (on && !counted_[b]) mem_->ref(b, v_[b], kind_, +1), counted_[b] = true;
    else if (!on && counted_[b]) mem_->ref(b, v_[b], kind_, -1), counted_[b] = false;
  }
}

void Clock::set(size_t b, Version v) {
  if (v_[b] == v) return;
  if (counted_[b]) mem_->ref(b, v_[b], kind_, -1);
  v_[b] = v;
  if (kind_ == Kind::Live) counted_[b] = true;
  if (counted_[b]) mem_->ref(b, v_[b], kind_, +1);
}

void Clock::merge(const Clock& o) {
  if (o.null()) return;
  for (size_t b = 0; b < v_.size(); ++b)
    if (o.v_[b] > v_[b]) set(b, o.v_[b]);
}

Clock Clock::as(Kind kind) const {
  Clock c(*mem_, kind);
  for (size_t b = 0; b < v_.size(); ++b) c.set(b, v_[b]);
  return c;
}

Clock Clock::snapshot() const {
  Clock c;
  c.mem_ = mem_;
  c.kind_ = Kind::Record;
  c.v_ = v_;
  c.counted_.assign(v_.size(), false);
  return c;
}

Clock Clock::record_since(const Clock& since) const {
  Clock c = snapshot();
  for (size_t b = 0; b < v_.size(); ++b)
    if (since.null() || v_[b] != since.v_[b]) mem_->ref(b, v_[b], Kind::Record, +1), c.counted_[b] = true;
  return c;
}

// ---------------- Memory ----------------

size_t Memory::add(const std::string& name, BufferData* live) {
  slots_.push_back(Slot{name, live, 0, UOp(), {}, {}, {}});
  return slots_.size() - 1;
}

void Memory::ref(size_t b, Version v, Clock::Kind k, int delta) {
  Slot& s = slots_[b];
  auto& counts = s.refs[v];
  counts[k == Clock::Kind::Live ? 0 : 1] += delta;
  if (counts[0] == 0 && counts[1] == 0) {
    s.refs.erase(v);
    forget(s);
  }
}

void Memory::forget(Slot& s) {
  for (auto it = s.kept.begin(); it != s.kept.end();)
    it = s.refs.count(it->first) ? std::next(it) : s.kept.erase(it);
  // An undo entry is needed while some referenced version at or before it may be rebuilt.
  Version oldest = s.latest;
  for (auto& [v, counts] : s.refs)
    if (v < s.latest && !s.kept.count(v)) oldest = std::min(oldest, v);
  s.undo.erase(std::remove_if(s.undo.begin(), s.undo.end(), [&](const Undo& u) { return u.before < oldest; }), s.undo.end());
}

bool Memory::aliases(size_t b, const Value& v) const {
  const Slot& s = slots_[b];
  auto shares = [&](const BufferData& d) { return (v.data && v.data == d.data) || (v.poison && v.poison == d.poison); };
  if (shares(*s.live)) return true;
  for (auto& [ver, d] : s.kept)
    if (shares(d)) return true;
  return false;
}

Value region_of(const StoragePtr& storage, DType dtype, const View& region) {
  Value v;
  v.dtype = dtype;
  v.view = region;
  v.data = storage;
  return v;
}

BufferData Memory::rebuild(Slot& s, Version v) {
  // Start from the nearest newer version that exists as a whole, then undo the writes back to v.
  Version from = s.latest;
  const BufferData* base = s.live;
  for (auto& [ver, d] : s.kept)
    if (ver > v && ver < from) from = ver, base = &d;
  BufferData out = copy_buffer(*base);
  for (Version at = from; at != v;) {
    auto u = std::find_if(s.undo.rbegin(), s.undo.rend(), [&](const Undo& e) { return e.after == at; });
    if (u == s.undo.rend() || u->before < v)
      throw InternalError("interpreter: version " + std::to_string(v) + " of buffer '" + s.name + "' cannot be rebuilt (no undo entry for version " + std::to_string(at) + ")");
    Value dst = region_of(out.data, out.dtype, u->region);
    write_through(dst, region_of(u->data, out.dtype, View::contiguous(u->region.shape)));
    if (u->poison || out.poison) {
      if (!out.poison) out.poison = std::make_shared<Storage>(dtypes::bool_, out.data->size);
      Value pd = region_of(out.poison, dtypes::bool_, u->region);
      write_through(pd, u->poison ? region_of(u->poison, dtypes::bool_, View::contiguous(u->region.shape)) : scalar(dtypes::bool_, 0));
    }
    at = u->before;
  }
  return out;
}

const BufferData& Memory::contents(size_t b, Version v) {
  Slot& s = slots_[b];
  if (v == s.latest) return *s.live;
  if (auto it = s.kept.find(v); it != s.kept.end()) return it->second;
  if (v > s.latest) throw InternalError("interpreter: version " + std::to_string(v) + " of buffer '" + s.name + "' does not exist yet");
  BufferData d = rebuild(s, v);
  return s.kept.emplace(v, std::move(d)).first->second;
}

BufferData& Memory::begin_write(size_t b, Clock& writer, const View& region, UOp node, bool cache) {
  Slot& s = slots_[b];
  Version pre = s.latest;
  if (cache) writer.set(b, pre);  // a recomputed value: whatever wrote it last does not matter
  if (writer.at(b) != pre)
    throw Error("buffer '" + s.name + "' is written without being ordered after its earlier write (" +
                (s.last_writer ? describe_(s.last_writer) : std::string("?")) +
                "): two unordered writes of one buffer race; order them with AFTER or GROUP (SEMANTICS S5.5)");
  auto counts = s.refs.count(pre) ? s.refs[pre] : std::array<int, 2>{0, 0};
  int live_others = counts[0] - (writer.at(b) == pre ? 1 : 0);
  bool older_needed = false;  // a referenced version at or before `pre` would be rebuilt through this write
  for (auto& [v, c] : s.refs)
    if (v <= pre && !s.kept.count(v) && (v != pre || c[1] > 0 || live_others > 0)) older_needed = true;
  if (live_others > 0) {
    // Values on the stack may view the live storage: keep it as it is and write into a copy.
    s.kept.emplace(pre, *s.live);
    BufferData copy = copy_buffer(*s.live);
    s.live->data = copy.data;
    s.live->poison = copy.poison;
  } else if (older_needed) {
    Undo u{pre, next_version_, region, contiguous(region_of(s.live->data, s.live->dtype, region)).data, nullptr};
    if (s.live->poison) u.poison = contiguous(region_of(s.live->poison, dtypes::bool_, region)).data;
    s.undo.push_back(std::move(u));
  }
  s.latest = next_version_++;
  s.last_writer = node;
  writer.set(b, s.latest);
  forget(s);
  return *s.live;
}

}  // namespace ow::interp
