// The smezo version (semantic versioning); `smezo --version` adds the git commit.
#pragma once

#define SMEZO_VERSION_MAJOR 0
#define SMEZO_VERSION_MINOR 1
#define SMEZO_VERSION_PATCH 0
#define SMEZO_VERSION "0.1.0"
