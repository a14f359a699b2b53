# outerworld's stand-in for tinygrad's test/unit/test_dtype_spec.py, which the suite copy in
# ../shared/tinygrad/suite lacks although its test_dtype.py imports five names from it. Written
# for tools/oracle_suite.sh from what those names mean at the suite's tinygrad commit: the dtype
# lists the tests draw from, the largest finite fp8 values, and the assertion helper with its
# per-dtype relative tolerances; hypothesis' profile of that module (200 examples, no deadline) is
# registered too, since importing the module is what sets it for test_dtype.py.
import numpy as np
from hypothesis import settings
from tinygrad import dtypes
from tinygrad.device import is_dtype_supported
from tinygrad.dtype import DTYPES_DICT
from tinygrad.helpers import getenv

settings.register_profile("my_profile", max_examples=200, deadline=None, derandomize=getenv("DERANDOMIZE_CI", False))
settings.load_profile("my_profile")

core_dtypes = list(DTYPES_DICT.values())  # a list: test_dtype.py removes bfloat16 from it on CPU
dtype_ints = [dt for dt in core_dtypes if dtypes.is_int(dt) and is_dtype_supported(dt)]
dtype_floats = [dt for dt in core_dtypes if dtypes.is_float(dt) and is_dtype_supported(dt)]

FP8E4M3_MAX = 448.0    # 1.75 * 2^8: e4m3 has no infinity, its top exponent holds finite values
FP8E5M2_MAX = 57344.0  # 1.75 * 2^15

RTOL = {dtypes.float16: 1e-3, dtypes.bfloat16: 1e-2, dtypes.fp8e4m3: 1e-1, dtypes.fp8e5m2: 5e-1}

def _assert_eq(tensor, target_dtype, target, tol_target_dtype=1e-7):
  got = tensor.numpy()
  try:
    assert tensor.dtype == target_dtype
    np.testing.assert_allclose(got, target, rtol=RTOL.get(target_dtype, tol_target_dtype))
  except AssertionError as e:
    raise AssertionError(f"\ntensor {got} dtype {tensor.dtype} does not match target {target} with dtype {target_dtype}") from e
