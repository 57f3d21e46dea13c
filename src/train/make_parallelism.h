// Which Parallelism a run's processes use (internal), chosen apart from them so that none knows
// the others: the stages of a pipeline with --pipeline N > 1 on several ranks (train/pipeline.h),
// else data parallelism (train/data_parallel.h), a single process's too.
#pragma once

#include <memory>

#include "train/comm.h"
#include "train/parallelism.h"
#include "train/pipeline.h"

namespace frugal {

// Uses `comm`, which must outlive it.
std::unique_ptr<Parallelism> make_parallelism(Comm& comm, const PipelineOptions& pipeline = {});

}  // namespace frugal
