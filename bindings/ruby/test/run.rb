# SPDX-License-Identifier: BSD-3-Clause
# Runs every *_test.rb of this directory against the harness nodes:
#   python3 tests/harness/nodes.py exec --count 5 --kind mixed -- \
#     ruby -Ibindings/ruby/lib -I<build>/bindings/swig/ruby/ruby bindings/ruby/test/run.rb
# (make test-ruby does this). Without the harness every test fails: none is skipped.
require "minitest/autorun"
Dir[File.join(__dir__, "*_test.rb")].sort.each { |f| require f }
