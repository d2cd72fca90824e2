// The smezo version (semantic versioning). `smezo --version` prints it with the git commit
// the binary was built from.
#pragma once

#define SMEZO_VERSION_MAJOR 0
#define SMEZO_VERSION_MINOR 1
#define SMEZO_VERSION_PATCH 0
#define SMEZO_VERSION "0.1.0"
