// Which Parallelism (see make_parallelism.h).
#include "train/make_parallelism.h"

#include "train/data_parallel.h"

namespace frugal {

std::unique_ptr<Parallelism> make_parallelism(Comm& comm, const PipelineOptions& pipeline) {
  if (comm.grouped() && pipeline.stages > 1) return make_pipeline(comm, pipeline);
  return std::make_unique<DataParallel>(comm);
}

}  // namespace frugal
