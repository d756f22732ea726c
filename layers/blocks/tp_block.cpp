#include "collscope/layers/blocks/tp_block.hpp"

namespace collscope::layers {

std::vector<PlannedCall> tp_block_plan(std::size_t tokens_x_hidden, Passes p,
                                       const std::string& forward_site,
                                       const std::string& backward_site) {
  std::vector<PlannedCall> calls;
  if (p.forward)
    calls.push_back(planned_call(forward_site, Collective::allreduce, GroupKind::tp, tokens_x_hidden));
  if (p.backward)
    calls.push_back(planned_call(backward_site, Collective::allreduce, GroupKind::tp, tokens_x_hidden));
  return calls;
}

TextbookFigure tp_block_textbook_figure(std::size_t tokens_x_hidden, int tp, Passes p,
                                        DataType storage, const std::string& anchor,
                                        const std::string& block, const std::string& note) {
  const double phi = static_cast<double>(tokens_x_hidden);
  const double calls = (p.forward ? 1 : 0) + (p.backward ? 1 : 0);
  TextbookFigure s;
  s.source = "Shoeybi et al. 2019 (Megatron-LM), section 3 (docs/textbook-formulas.md, " + anchor +
             "; 8 x b x s x h per transformer layer)";
  s.formula = "2 Phi per allreduce, Phi = b x s x h (" + block + " forward + backward: 4 Phi)";
  s.elements = 2 * phi * calls;
  s.bytes = s.elements * static_cast<double>(dtype_size(storage));
  s.explanation =
      "the figure counts elements, not bytes, and takes each of the allreduce's two phases "
      "(reduce-scatter, all-gather) as moving the whole [b s, h] tensor; a ring rank "
      "sends (TP-1)/TP of it per phase, so the exact figure is (TP-1)/TP = " +
      std::to_string(tp - 1) + "/" + std::to_string(tp) +
      " of the textbook one (x the element size), nothing at TP 1, and with uneven blocks it "
      "differs per rank; " + note;
  return s;
}

}  // namespace collscope::layers
