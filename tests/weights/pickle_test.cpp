// The data-only unpickler and the torch.save zip around it, on crafted bytes: globals that could run
// code, calls of anything but torch's tensor rebuilders, INST/OBJ, memo and nesting abuse, tensors
// reaching past their storage or wrapping 64 bits, lying records. Each is Error(invalid) or
// Error(unsupported) naming the file (exit 3); none crashes, hangs or allocates without bound.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frugal/util/error.h"
#include "frugal/weights/torch_save.h"
#include "frugal/util/pickle.h"
#include "weights/pickle_builder.h"
#include "weights/state_dict.h"

namespace frugal {
namespace {

using testing::Pickle;
using testing::TestEntry;
using testing::torch_zip;

std::span<const std::uint8_t> span_of(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

StateDict read(const std::string& pickle) { return read_state_dict_pickle(span_of(pickle), "crafted.pth"); }

// The message of the Error `fn` throws (failing the test when it throws nothing or something else),
// checked to be exit 3 and to name the file.
template <class Fn>
std::string refusal(Fn&& fn, ErrorKind kind = ErrorKind::invalid) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_EQ(exit_code(e.kind()), 3);
    EXPECT_NE(std::string(e.what()).find("crafted.pth"), std::string::npos) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a frugal::Error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error";
  return "";
}

std::string floats(std::initializer_list<float> v) {
  return std::string(reinterpret_cast<const char*>(std::data(v)), v.size() * sizeof(float));
}

TEST(TorchSavePickle, AHandWrittenStateDictReads) {
  const std::string zip =
      torch_zip(testing::one_tensor_pickle("fc.weight", {2, 3}), {{"data/0", floats({1, 2, 3, 4, 5, 6})}});
  const TorchSaveFile f = TorchSaveFile::from_bytes(zip, "crafted.pth");
  ASSERT_EQ(f.tensors().size(), 1u);
  const SavedTensor& t = f.tensors()[0];
  EXPECT_EQ(t.name, "fc.weight");
  EXPECT_EQ(t.dtype, "F32");
  EXPECT_EQ(t.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(t.byte_end, 24u);
  const auto bytes = f.tensor_bytes(t);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), floats({1, 2, 3, 4, 5, 6}));
}

TEST(TorchSavePickle, TensorsSavedFromAGpuReadAsAnyOther) {
  Pickle p;  // the storage's location is where torch.load would put it; frugal reads the bytes
  p.op('}').mark().str("w").tensor("0", 2, 0, {2}, {1}, "HalfStorage", "cuda:0").op('u').stop();
  const StateDict sd = read(p.s);
  ASSERT_EQ(sd.tensors.size(), 1u);
  EXPECT_EQ(sd.tensors[0].dtype, "F16");
  EXPECT_EQ(sd.tensors[0].byte_end, 4u);
}

TEST(TorchSavePickle, GlobalsThatCouldRunCodeAreRefusedByName) {
  const std::vector<std::pair<std::string, std::string>> globals = {{"os", "system"},
                                                                    {"posix", "system"},
                                                                    {"builtins", "eval"},
                                                                    {"__builtin__", "exec"},
                                                                    {"torch", "load"},
                                                                    {"subprocess", "Popen"},
                                                                    {"torch.serialization", "load"},
                                                                    {"__main__", "Net"}};
  for (const auto& [module, name] : globals) {
    SCOPED_TRACE(module + "." + name);
    Pickle p;  // os.system('touch pwned') as a pickle calls it
    p.global(module, name).str("touch pwned").op('\x85').op('R').stop();
    const std::string m = refusal([&] { read(p.s); });
    EXPECT_NE(m.find("refusing to load " + module + "." + name + ": it could run code"), std::string::npos) << m;
    EXPECT_NE(m.find("nothing was run"), std::string::npos) << m;
    // STACK_GLOBAL (protocol 4) names it from two strings on the stack.
    Pickle q;
    q.str(module).str(name).op('\x93').stop();
    EXPECT_NE(refusal([&] { read(q.s); }).find("refusing to load " + module + "." + name), std::string::npos);
  }
}

TEST(TorchSavePickle, OnlyTorchsRebuildersAreCalled) {
  Pickle storage_call;  // a storage class is a known global, but not one to call
  storage_call.global("torch", "FloatStorage").op(')').op('R').stop();
  EXPECT_NE(refusal([&] { read(storage_call.s); }).find("REDUCE only on OrderedDict"), std::string::npos);
  Pickle string_call;
  string_call.str("os.system").op(')').op('R').stop();
  refusal([&] { read(string_call.s); });
  Pickle dict_with_args;  // OrderedDict([...]) could hide a call in its argument; only () is taken
  dict_with_args.global("collections", "OrderedDict").mark().op(']').op('t').op('R').stop();
  refusal([&] { read(dict_with_args.s); });
  Pickle newobj;
  newobj.global("torch._utils", "_rebuild_tensor_v2").op(')').op('\x81').stop();
  refusal([&] { read(newobj.s); });
  Pickle build;  // BUILD sets attributes (could be __setstate__): only an OrderedDict's are ignored
  build.op(']').op('}').op('b').stop();
  refusal([&] { read(build.s); });
}

TEST(TorchSavePickle, InstObjPersidAndTextOpcodesAreRefused) {
  for (const std::string body : {std::string("(ios\nsystem\nX\x02\x00\x00\x00ls."),  // INST
                                 std::string("(cos\nsystem\no."),                    // OBJ (global refused first)
                                 std::string("(o."),                                 // OBJ
                                 std::string("P1\n."),                               // PERSID
                                 std::string("\x82\x01."),                           // EXT1
                                 std::string("I1\n."),                               // INT (protocol 0)
                                 std::string("\x97."),                               // NEXT_BUFFER
                                 std::string("\xff.")}) {                            // no such opcode
    SCOPED_TRACE(body);
    refusal([&] { read("\x80\x02" + body); });
  }
  EXPECT_NE(refusal([&] { read(std::string("\x80\x02(o.")); }).find("OBJ"), std::string::npos);
}

TEST(TorchSavePickle, DeepNestingAndCyclesNeitherRecurseNorHang) {
  Pickle lists;  // a million lists, each inside the one before
  for (int i = 0; i <= 1000000; ++i) lists.op(']');
  for (int i = 0; i < 1000000; ++i) lists.op('a');
  lists.stop();
  EXPECT_NE(refusal([&] { read(lists.s); }).find("found a list"), std::string::npos);

  Pickle dicts;  // {"model": {"model": ... }} 100 000 deep
  for (int i = 0; i < 100000; ++i) dicts.op('}').str("model");
  dicts.op('}');
  for (int i = 0; i < 100000; ++i) dicts.op('s');
  dicts.stop();
  EXPECT_NE(refusal([&] { read(dicts.s); }).find("under 'model.model.model.model'"), std::string::npos);

  Pickle cycle;  // d = {}; d["model"] = d
  cycle.op('}').raw("q\x00").str("model").raw("h\x00").op('s').stop();
  refusal([&] { read(cycle.s); });
  Pickle list_cycle;  // l = []; l.append(l)
  list_cycle.op(']').raw("q\x00h\x00").op('a').stop();
  refusal([&] { read(list_cycle.s); });
}

TEST(TorchSavePickle, MemoAbuseIsRefused) {
  Pickle huge_index;
  huge_index.op('N').raw(std::string("r\xf0\xff\xff\xff", 5)).stop();
  EXPECT_NE(refusal([&] { read(huge_index.s); }).find("memo index"), std::string::npos);
  Pickle unset;
  unset.raw("h\x05").stop();
  refusal([&] { read(unset.s); });
  Pickle long_get;
  long_get.raw(std::string("j\xff\xff\xff\xff", 5)).stop();
  refusal([&] { read(long_get.s); });
  Pickle many_puts;  // one value memoized under index after index: more entries than values
  many_puts.op('N');
  for (int i = 0; i < 200; ++i) many_puts.raw(std::string("q") + static_cast<char>(i));
  many_puts.stop();
  EXPECT_NE(refusal([&] { read(many_puts.s); }).find("memo entry per value"), std::string::npos);
}

TEST(TorchSavePickle, ValueAndPushLimitsHold) {
  Pickle many;
  for (int i = 0; i < 2000; ++i) many.int1(1);
  many.stop();
  pickle::Limits small;
  small.max_values = 1000;
  EXPECT_NE(refusal([&] { pickle::unpickle(span_of(many.s), "crafted.pth", small); }).find("at most 1000 values"),
            std::string::npos);
  Pickle dups;  // DUP adds no value, but every push counts
  dups.op('N');
  for (int i = 0; i < 3000; ++i) dups.op('2');
  dups.stop();
  EXPECT_NE(refusal([&] { pickle::unpickle(span_of(dups.s), "crafted.pth", small); }).find("values pushed"),
            std::string::npos);
}

TEST(TorchSavePickle, TruncatedAndLyingLengthsAreRefused) {
  refusal([&] { read("\x80\x02}"); });                                                      // no STOP
  refusal([&] { read(std::string("\x80\x02X\xff\xff\xff\x7f", 7)); });                      // a string past the end
  refusal([&] { read(std::string("\x80\x02\x8b\xff\xff\xff\xff", 7)); });                   // LONG4 of -1 bytes
  refusal([&] { read(std::string("\x80\x02\x8d\xff\xff\xff\xff\xff\xff\xff\xff", 11)); });  // BINUNICODE8
  refusal([&] { read(std::string("\x80\x09.", 3)); });                                      // protocol 9
  refusal([&] { read(std::string("\x80\x02.", 3)); });                                      // STOP on an empty stack
  refusal([&] {
    read(
        std::string("\x80\x02"
                    "0.",
                    4));
  });  // POP of nothing
  refusal([&] {
    read(
        std::string("\x80\x02"
                    "t.",
                    4));
  });                                                         // TUPLE without MARK
  refusal([&] { read(std::string("\x80\x02(N}(Nu.", 9)); });  // SETITEMS of an odd count
}

TEST(TorchSavePickle, TensorsMustLieInsideTheirStorage) {
  Pickle past;  // 2x3 floats from offset 1 of a 6-float storage
  past.op('}').mark().str("w").tensor("0", 6, 1, {2, 3}, {3, 1}).op('u').stop();
  EXPECT_NE(refusal([&] { read(past.s); }).find("reaching byte 28"), std::string::npos);

  Pickle wraps;  // 2^40 x 2^40 elements: the count wraps 64 bits
  wraps.op('}')
      .mark()
      .str("w")
      .tensor("0", 6, 0, {std::int64_t{1} << 40, std::int64_t{1} << 40}, {1, 1})
      .op('u')
      .stop();
  refusal([&] { read(wraps.s); });
  Pickle huge_stride;
  huge_stride.op('}').mark().str("w").tensor("0", 6, 0, {3}, {std::int64_t{1} << 62}).op('u').stop();
  refusal([&] { read(huge_stride.s); });
  Pickle huge_storage;  // numel x 8 bytes wraps
  huge_storage.op('}').mark().str("w").tensor("0", std::int64_t{1} << 62, 0, {1}, {1}, "DoubleStorage").op('u').stop();
  refusal([&] { read(huge_storage.s); });
  Pickle negative;
  negative.op('}').mark().str("w").tensor("0", 6, 0, {-1}, {1}).op('u').stop();
  refusal([&] { read(negative.s); });
  Pickle ranks;  // two dims, one stride
  ranks.op('}').mark().str("w").tensor("0", 6, 0, {2, 3}, {1}).op('u').stop();
  refusal([&] { read(ranks.s); });
  Pickle expanded;  // (1000,) of stride 0 over one float: torch.load makes a view, a copy would be 250x the file
  expanded.op('}').mark().str("w").tensor("0", 1, 0, {1000}, {0}).op('u').stop();
  EXPECT_NE(refusal([&] { read(expanded.s); }, ErrorKind::unsupported).find("expanded view"), std::string::npos);
  Pickle two_sizes;  // one storage key, two sizes
  two_sizes.op('}').mark().str("a").tensor("0", 6, 0, {6}, {1}).str("b").tensor("0", 7, 0, {7}, {1}).op('u').stop();
  refusal([&] { read(two_sizes.s); });
  Pickle key;  // a storage key naming another record
  key.op('}').mark().str("w").tensor("../data.pkl", 1, 0, {1}, {1}).op('u').stop();
  refusal([&] { read(key.s); });
}

TEST(TorchSavePickle, UnreadDtypesAndMetadataAreUnsupportedNotUnsafe) {
  Pickle complex;
  complex.op('}').mark().str("w").tensor("0", 1, 0, {1}, {1}, "ComplexFloatStorage").op('u').stop();
  EXPECT_NE(refusal([&] { read(complex.s); }, ErrorKind::unsupported).find("complex tensors"), std::string::npos);
  Pickle conj;  // _rebuild_tensor_v2(..., metadata={'conj': True})
  conj.op('}').mark().str("w").global("torch._utils", "_rebuild_tensor_v2").mark();
  conj.mark().str("storage").global("torch", "FloatStorage").str("0").str("cpu").int1(1).op('t').op('Q');
  conj.int1(0).ints({1}).ints({1}).op('\x89').empty_ordered_dict().op('}').str("conj").op('\x88').op('s');
  conj.op('t').op('R').op('u').stop();
  EXPECT_NE(refusal([&] { read(conj.s); }, ErrorKind::unsupported).find("conjugate"), std::string::npos);
}

TEST(TorchSavePickle, ADictSetTwiceKeepsItsFirstPlaceAndLastValue) {
  Pickle p;  // as Python's dict: {"a": t0, "b": t1, "a": t2} is {"a": t2, "b": t1}
  p.op('}').mark();
  p.str("a").tensor("0", 1, 0, {1}, {1}).str("b").tensor("1", 2, 0, {2}, {1}).str("a").tensor("2", 3, 0, {3}, {1});
  p.op('u').stop();
  const StateDict sd = read(p.s);
  ASSERT_EQ(sd.tensors.size(), 2u);
  EXPECT_EQ(sd.tensors[0].name, "a");
  EXPECT_EQ(sd.tensors[0].storage_key, "2");
  EXPECT_EQ(sd.tensors[1].name, "b");
}

TEST(TorchSavePickle, PrefixesGoOnlyWhenEveryNameCarriesThem) {
  Pickle all;
  all.op('}')
      .mark()
      .str("module.a")
      .tensor("0", 1, 0, {1}, {1})
      .str("module.b")
      .tensor("1", 1, 0, {1}, {1})
      .op('u')
      .stop();
  EXPECT_EQ(read(all.s).prefix_removed, "module.");
  EXPECT_EQ(read(all.s).tensors[1].name, "b");
  Pickle some;
  some.op('}').mark().str("module.a").tensor("0", 1, 0, {1}, {1}).str("b").tensor("1", 1, 0, {1}, {1}).op('u').stop();
  EXPECT_EQ(read(some.s).prefix_removed, "");
  EXPECT_EQ(read(some.s).tensors[0].name, "module.a");
}

TEST(TorchSavePickle, CheckpointsAreUnwrappedByKnownKeysOnly) {
  Pickle under;  // {"epoch": 3, "state_dict": {"w": t}}
  under.op('}').mark().str("epoch").int1(3).str("state_dict").op('}').mark().str("w").tensor("0", 1, 0, {1}, {1});
  under.op('u').op('u').stop();
  EXPECT_EQ(read(under.s).found_under, "state_dict");
  Pickle other;  // {"epoch": 3, "weights": {"w": t}}: not a key frugal guesses
  other.op('}').mark().str("epoch").int1(3).str("weights").op('}').mark().str("w").tensor("0", 1, 0, {1}, {1});
  other.op('u').op('u').stop();
  const std::string m = refusal([&] { read(other.s); });
  EXPECT_NE(m.find("'epoch', 'weights'"), std::string::npos) << m;
  EXPECT_NE(m.find("'epoch' holds the int 3"), std::string::npos) << m;
}

// ---- the zip around the pickle ----

TEST(TorchSaveZip, LyingRecordsAreRefused) {
  const std::string pk = testing::one_tensor_pickle("w", {2});
  auto open = [](const std::string& zip) { return TorchSaveFile::from_bytes(zip, "crafted.pth"); };
  EXPECT_NE(refusal([&] { open(torch_zip(pk, {})); }).find("archive/data/0"), std::string::npos);  // missing
  EXPECT_NE(refusal([&] { open(torch_zip(pk, {{"data/0", floats({1})}})); }).find("8 bytes"), std::string::npos);
  EXPECT_NE(refusal(
                [&] {
                  open(torch_zip(pk, {{"data/0", floats({1, 2})}}, "big"));
                },
                ErrorKind::unsupported)
                .find("big-endian"),
            std::string::npos);
  refusal([&] { open(torch_zip(pk, {{"data/0", floats({1, 2})}}, "middle")); });
  std::vector<TestEntry> deflated = {{"archive/data.pkl", pk}, {"archive/data/0", floats({1, 2}), true}};
  EXPECT_NE(refusal([&] { open(testing::build_zip(deflated)); }).find("stored uncompressed"), std::string::npos);
  std::vector<TestEntry> twice = {
      {"archive/data.pkl", pk}, {"archive/data/0", floats({1, 2})}, {"archive/data/0", floats({3, 4})}};
  refusal([&] { open(testing::build_zip(twice)); });
  std::vector<TestEntry> bad_crc = {{"archive/data.pkl", pk}, {"archive/data/0", floats({1, 2})}};
  bad_crc[1].crc = 0x12345678;
  const TorchSaveFile f = open(testing::build_zip(bad_crc));  // the header is read; the bytes are checked when read
  EXPECT_THROW(f.tensor_bytes(f.tensors()[0]), Error);
  std::vector<TestEntry> no_folder = {{"data.pkl", pk}};
  refusal([&] { open(testing::build_zip(no_folder)); });
  std::vector<TestEntry> script = {{"m/data.pkl", pk}, {"m/constants.pkl", pk}, {"m/code/__torch__.py", "x"}};
  EXPECT_NE(refusal([&] { open(testing::build_zip(script)); }, ErrorKind::unsupported).find("TorchScript"),
            std::string::npos);
  EXPECT_NE(refusal([&] { open("not a zip at all"); }).find("a torch.save file"), std::string::npos);
  EXPECT_NE(refusal([&] { open(std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 14)); },
                    ErrorKind::unsupported)
                .find("torch.save(torch.load('crafted.pth'), 'converted.pth')"),
            std::string::npos);
}

TEST(TorchSaveZip, ARecordWithoutCrcAsTorchWritesItWithCrcOffIsRead) {
  std::vector<TestEntry> e = {{"archive/data.pkl", testing::one_tensor_pickle("w", {2})},
                              {"archive/data/0", floats({1, 2})}};
  e[1].crc = 0;
  const TorchSaveFile f = TorchSaveFile::from_bytes(testing::build_zip(e), "crafted.pth");
  const auto bytes = f.tensor_bytes(f.tensors()[0]);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), floats({1, 2}));
}

}  // namespace
}  // namespace frugal
