#include "commands.h"

namespace frugal::cli {

#ifdef FRUGAL_TORCH_EXECUTABLE
#define TORCH(h) (h)
#else
#define TORCH(h) nullptr
#endif

namespace {
const Command kCommands[] = {
    {"doctor", "machine report: CPU, RAM, disk, GPUs, CUDA/cuDNN/LibTorch and what this build supports", true,
     TORCH(cmd_doctor)},
    {"pack", "build a dataset zip from a folder of class sub-folders or IDX files", false, cmd_pack},
    {"split", "cut a file into parts with a manifest of SHA-256 sums", false, cmd_split},
    {"join", "rebuild a file from its parts, verifying each", false, cmd_join},
    {"verify", "check a manifest's parts and every zip entry's CRC-32 and size", false, cmd_verify},
    {"ls", "list the entries of an archive", false, cmd_ls},
    {"extract", "extract entries safely, within a disk budget", false, cmd_extract},
    {"train", "train a model straight from an archive", true, TORCH(cmd_train)},
    {"eval", "loss, top-1 and per-class accuracy of a checkpoint", true, TORCH(cmd_eval)},
    {"predict", "class predictions for image files", true, TORCH(cmd_predict)},
    {"compress", "prune and quantize a model", true, TORCH(cmd_compress)},
    {"export", "export a model to ONNX", true, TORCH(cmd_export)},
    {"bench", "measure parts of the pipeline (bench loader ARCHIVE)", true, TORCH(cmd_bench)},
    {"report", "one HTML page of a run: curves, confusion matrix, worst images, facts", true, TORCH(cmd_report)},
    {"du", "disk use of a workspace by kind, against its budget", false, cmd_du},
    {"clean", "remove temporary files and checkpoints retention no longer needs", false, cmd_clean},
};
}  // namespace

std::span<const Command> commands() { return kCommands; }

}  // namespace frugal::cli
