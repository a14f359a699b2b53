// What each compiled kernel node computes (kernel_eval_impl.h): one function per op and dtype,
// chosen once at compile time (kernel_eval_compile.cpp) and called through a pointer. The
// arithmetic is interp/scalar_ops.h's, the tensor interpreter's, so the two agree bit for bit.
// A result is poison where an operand it reads is.
#pragma once
#include <memory>

#include "interp/dispatch.h"
#include "interp/kernel_eval_impl.h"
#include "interp/scalar_ops.h"

namespace ow::interp {

struct Kernel::Impl::Eval {
  template <class T> static T& get(Val& v) { return kernel_eval::get<T>(v); }

  template <class T, T (*F)(T)> static void un(Impl&, Node& n) {
    get<T>(n.v) = F(get<T>(n.s[0]->v));
    n.poison = n.s[0]->poison;
  }
  template <class T, class R, R (*F)(T, T)> static void bin(Impl&, Node& n) {
    get<R>(n.v) = F(get<T>(n.s[0]->v), get<T>(n.s[1]->v));
    n.poison = n.s[0]->poison | n.s[1]->poison;
  }
  // A binary op that can fail: integer division by zero, a shift count out of range, an integer
  // POW with a negative exponent.
  template <class T, T (*F)(T, T)> static void checked_bin(Impl& I, Node& n) {
    try {
      get<T>(n.v) = F(get<T>(n.s[0]->v), get<T>(n.s[1]->v));
    } catch (const sop::DivByZero&) {
      I.fail(n.u, "integer division by zero");
    } catch (const sop::BadShift& e) {
      I.fail(n.u, e.message());
    } catch (const sop::NegativeExponent& e) {
      I.fail(n.u, e.message());
    }
    n.poison = n.s[0]->poison | n.s[1]->poison;
  }
  template <class T, T (*F)(T, T, T)> static void tern(Impl&, Node& n) {
    get<T>(n.v) = F(get<T>(n.s[0]->v), get<T>(n.s[1]->v), get<T>(n.s[2]->v));
    n.poison = n.s[0]->poison | n.s[1]->poison | n.s[2]->poison;
  }
  // WHERE is poison where the condition is, or where the branch it selects is.
  template <class T> static void where(Impl&, Node& n) {
    bool c = n.s[0]->v.b != 0;
    Node* pick = c ? n.s[1] : n.s[2];
    get<T>(n.v) = get<T>(pick->v);
    n.poison = n.s[0]->poison | pick->poison;
  }
  template <class To, class From> static void cast_fn(Impl&, Node& n) {
    get<To>(n.v) = convert<To>(get<From>(n.s[0]->v));
    n.poison = n.s[0]->poison;
  }
  template <class To, class From> static void bitcast_fn(Impl&, Node& n) {
    get<To>(n.v) = sop::bitcast_op<To, From>(get<From>(n.s[0]->v));
    n.poison = n.s[0]->poison;
  }
  // A LOAD reads the buffer as it was at launch (the snapshot, if the kernel also writes it).
  template <class T> static void load(Impl& I, Node& n) {
    if (!I.access("LOAD", n.slot, n.lin, n.gate, n.s[0]->u)) {
      get<T>(n.v) = T(0);
      n.poison = false;
      return;
    }
    const Slot& s = I.slot(n.slot);
    int64_t k = n.lin->v.i;
    if (s.snap) {
      get<T>(n.v) = s.snap->load<T>(k, n.poison);
      return;
    }
    get<T>(n.v) = static_cast<const T*>(s.rdata)[k];
    n.poison = s.rpoison && s.rpoison[k];
  }
  template <class T, Ops OP> static void reduce(Impl& I, Node& n) {
    Loop& L = I.loops[static_cast<size_t>(n.loop)];
    T acc = sop::identity<T>(OP);
    bool p = false;
    Node* x = L.fold;
    uint64_t steps = 0;
    I.run_loop_fn(L, [&] {
      if constexpr (OP == Ops::ADD) acc = sop::wrap_add<T>(acc, get<T>(x->v));
      else if constexpr (OP == Ops::MUL) acc = sop::wrap_mul<T>(acc, get<T>(x->v));
      else acc = sop::max_op<T>(acc, get<T>(x->v));
      p |= x->poison;
      ++steps;
    });
    I.ops += steps;
    get<T>(n.v) = acc;
    n.poison = p;
  }
  // A STORE writes in place; the buffer gets a poison mask the first time poison lands in it.
  template <class T> static void store(Impl& I, Stmt& s) {
    for (Node* x : s.locals) x->fn(I, *x);
    I.ops += s.locals.size();
    if (!I.access("STORE", s.slot, s.lin, s.gate, s.index)) return;
    Slot& b = I.slot(s.slot);
    int64_t k = s.lin->v.i;
    if (b.snap) b.snap->before_store(k);
    b.bd->data->as<T>()[k] = get<T>(s.value->v);
    if (s.value->poison && !b.bd->poison) {
      b.bd->poison = std::make_shared<Storage>(dtypes::bool_, b.size);
      b.bd->poison->set_nonzero(0);
    }
    if (b.bd->poison) b.bd->poison->set_mask_element(k, s.value->poison);
    ++I.ops;
  }
};

}  // namespace ow::interp
