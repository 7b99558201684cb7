/*
 * The compression libraries the library links (Debian: zlib1g-dev, libzstd-dev,
 * libbrotli-dev): zlib for gzip and deflate, libzstd for zstd, libbrotli for br. They are
 * shared-library dependencies of libafserialization.so (pkg-config: Requires.private; the
 * Python wheel bundles the ones the manylinux policy does not allow). The core reaches
 * them through this module only; nothing of theirs is exported.
 */
#ifndef CAFS_CODECS_H
#define CAFS_CODECS_H

#include <zlib.h>
#include <zstd.h>
#include <brotli/decode.h>
#include <brotli/encode.h>

#endif
