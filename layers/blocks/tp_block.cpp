#include "collscope/layers/blocks/tp_block.hpp"

#include "collscope/layers/framework/gather.hpp"

namespace collscope::layers {
namespace {

struct Gathered {
  std::vector<Tensor> x, dy, w_in, w_out, y, dx, dw_in, dw_out;  // by world rank
};

Gathered gather_block(MPI_Comm c, const TpBlockArrays& a) {
  return {gather_to_root(c, a.x),  gather_to_root(c, a.dy),    gather_to_root(c, a.w_in),
          gather_to_root(c, a.w_out), gather_to_root(c, a.y),  gather_to_root(c, a.dx),
          gather_to_root(c, a.dw_in), gather_to_root(c, a.dw_out)};
}

void check_group(const Gathered& g, const std::vector<int>& group, Passes p, DataType st,
                 const TpBlockChecks& what, const TpBlockReferenceFn& reference,
                 std::vector<TensorCheck>& checks) {
  const std::size_t lead = static_cast<std::size_t>(group.front());
  const TpBlockReference ref =
      reference(to_ref(g.x[lead]), concat_columns(ref_parts(g.w_in, group)),
                concat_rows(ref_parts(g.w_out, group)), to_ref(g.dy[lead]));
  for (int r : group) {
    const std::size_t i = static_cast<std::size_t>(r);
    if (p.forward) add_check(checks, "Y", compare(g.y[i], ref.y, st, what.y_terms));
    if (p.backward) add_check(checks, "dX", compare(g.dx[i], ref.dx, st, what.dx_terms));
  }
  if (!p.backward) return;
  add_check(checks, what.dw_in,
            compare(concat_columns(parts_of(g.dw_in, group)), ref.dw_in, st, what.dw_terms));
  add_check(checks, what.dw_out,
            compare(concat_rows(parts_of(g.dw_out, group)), ref.dw_out, st, what.dw_terms));
}

}  // namespace

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

std::vector<TensorCheck> verify_tp_block(LayerContext& ctx, Passes p, const TpBlockArrays& mine,
                                         const TpBlockChecks& checks,
                                         const TpBlockReferenceFn& reference) {
  const Gathered g = gather_block(ctx.ctrl(), mine);
  return checks_per_group(ctx.world_rank(), ctx.config(), GroupKind::tp,
                          [&](const std::vector<int>& group, std::vector<TensorCheck>& out) {
                            check_group(g, group, p, ctx.storage(), checks, reference, out);
                          });
}

}  // namespace collscope::layers
