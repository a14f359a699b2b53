// Precompiled for every file of the ow executable (meson cpp_pch): the headers nearly all of them
// parse, boost::program_options the heaviest. Only system headers and stable project ones.
#include <boost/program_options.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include "uop/uop.h"
