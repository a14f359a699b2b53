"""Tiny tinygrad tests for the oracle's pytest plugin (test_oracle_plugin.py runs them under
`pytest -p outerworld.tinygrad.pytest_plugin --ow-oracle -n 2`). Every test passes in tinygrad;
under the oracle one realize disagrees, on purpose, where tinygrad departs from IEEE 754."""
import unittest

import numpy as np
from tinygrad import Tensor, Variable


class SmokeCases(unittest.TestCase):
  def test_elementwise_and_reduce(self):
    x = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_allclose(((x * 2 - 1).exp2().sum(axis=1)).numpy(), (2.0 ** (np.arange(12).reshape(3, 4) * 2 - 1)).sum(1), rtol=1e-6)

  def test_zero_size(self):
    # realized zero-size buffers are inputs of the exported graphs (test_ops' gemm with zeros)
    # (realize() itself: numpy() of an empty result returns without realizing)
    a, b = Tensor(np.ones((4, 4), np.float32)), Tensor(np.ones((4, 0), np.float32))
    self.assertEqual((a @ b).realize().numpy().shape, (4, 0))
    self.assertEqual(Tensor(np.ones((2, 0), np.float32)).sum(axis=1).realize().numpy().tolist(), [0.0, 0.0])

  def test_bound_variable(self):
    data = np.arange(20, dtype=np.float32).reshape(4, 5)
    np.testing.assert_array_equal(Tensor(data)[Tensor(Variable("v", 0, 3).bind(2))].numpy(), data[2])

  def test_max_ignores_nan(self):
    # tinygrad's MAX returns 3.0 of [1, nan, 3]; IEEE 754 maximum, torch and outerworld give NaN:
    # the oracle's DISAGREE (a failure with --ow-strict)
    self.assertEqual(Tensor([1.0, float("nan"), 3.0]).max().item(), 3.0)
