"""Writes the synthetic AbGen sample (sample.jsonl, human_evaluation.json) in the real AbGen schema.

Everything here was written by the scibench developers: the four research contexts describe invented
studies, the "systems" are four invented response styles, and the human scores are synthetic
(assigned from each style's intended quality plus a fixed deterministic perturbation). Run:
    python data/samples/abgen/make_sample.py
"""
import json
from pathlib import Path

HERE = Path(__file__).parent

CONTEXTS = [
    dict(arxiv_id="sample-0001", title="RetroDistill: Retrieval-Augmented Distillation for Small Summarizers",
         research_background="Small summarization models hallucinate facts that are absent from the source. Prior work distills large "
         "teacher models into students but transfers the teacher's hallucinations too. Retrieval-augmented generation grounds "
         "outputs in evidence, but has not been combined with distillation for summarization.",
         method="RetroDistill trains a 300M-parameter student summarizer from a 7B teacher. (1) Evidence retrieval: for each source "
         "document, a BM25 retriever selects the five most relevant passages from the document itself and prepends them to the "
         "student's input. (2) Faithfulness filter: teacher summaries whose sentences are not entailed by the source, according to "
         "an NLI model, are dropped from the distillation set. (3) Contrastive loss: the student is trained with cross-entropy plus "
         "a contrastive loss that pushes apart its representations of faithful and perturbed (unfaithful) summaries.",
         setup="Datasets: CNN/DailyMail and XSum. Baselines: the student trained with plain sequence-level distillation, and the "
         "teacher itself. Metrics: ROUGE-1/2/L and FactCC faithfulness accuracy. All students are trained for 3 epochs with the same "
         "hyperparameters.",
         results="RetroDistill reaches ROUGE-L 38.1 on CNN/DailyMail (plain distillation 36.9) and 31.4 on XSum (30.2). FactCC rises "
         "from 71.5 to 80.2 on CNN/DailyMail and from 58.3 to 69.0 on XSum, closing most of the gap to the teacher (82.0 / 70.5).",
         ablations=[
            dict(module_name="Faithfulness filter",
                 research_objective="Measure how much removing NLI-unfaithful teacher summaries from the distillation set contributes to the student's faithfulness.",
                 experiment_setup="Train the student with evidence retrieval and the contrastive loss but keep all teacher summaries (no NLI filter). "
                 "Compare against full RetroDistill on CNN/DailyMail and XSum with ROUGE-1/2/L and FactCC, same training budget.",
                 results="Without the filter FactCC drops by 5.8 (CNN/DM) and 7.1 (XSum) points while ROUGE changes by less than 0.3."),
            dict(module_name="Contrastive loss",
                 research_objective="Test whether the contrastive loss between faithful and perturbed summaries improves faithfulness beyond filtering and retrieval.",
                 experiment_setup="Train students with cross-entropy only (retrieval and filter kept) and with the full loss; evaluate both on "
                 "CNN/DailyMail and XSum with ROUGE and FactCC; repeat with three seeds and report means.",
                 results="Removing the contrastive loss lowers FactCC by 2.4 and 3.0 points; ROUGE is unchanged."),
         ]),
    dict(arxiv_id="sample-0002", title="Curriculum Token Dropping for Efficient Vision Transformers",
         research_background="Vision transformers spend most compute on uninformative background tokens. Token pruning methods remove "
         "tokens at inference but hurt accuracy when applied aggressively, and most are tuned for a fixed pruning ratio.",
         method="We propose Curriculum Token Dropping (CTD). (1) A lightweight scorer, a two-layer MLP on the class-attention map, ranks "
         "tokens after blocks 3, 6 and 9. (2) A curriculum raises the share of dropped tokens from 0% to 50% linearly over the first "
         "half of training. (3) Dropped tokens are merged into a single summary token by attention-weighted averaging instead of "
         "being discarded.",
         setup="Models: DeiT-S and DeiT-B trained on ImageNet-1k for 300 epochs. Baselines: DynamicViT and EViT at matched FLOPs. "
         "Metrics: top-1 accuracy, GFLOPs and images per second on one A100.",
         results="CTD keeps DeiT-S top-1 at 79.6% (dense 79.8%) with 35% fewer GFLOPs and 1.5x throughput, outperforming DynamicViT "
         "(79.3%) and EViT (79.1%) at the same FLOPs.",
         ablations=[
            dict(module_name="Curriculum schedule",
                 research_objective="Assess whether ramping up the drop ratio during training is better than dropping at the final ratio from the start.",
                 experiment_setup="Train DeiT-S with a constant 50% drop ratio from epoch 0 and with the linear curriculum; everything else "
                 "fixed. Report ImageNet top-1 and GFLOPs for both.",
                 results="The constant schedule loses 0.9 points of top-1 at equal GFLOPs."),
            dict(module_name="Token merging",
                 research_objective="Determine the benefit of merging dropped tokens into a summary token rather than discarding them.",
                 experiment_setup="Replace the attention-weighted summary token with plain discarding in DeiT-S and DeiT-B; keep the scorer "
                 "and curriculum; compare top-1, GFLOPs and throughput.",
                 results="Discarding reduces top-1 by 0.5 (DeiT-S) and 0.3 (DeiT-B) points with negligible speed difference."),
         ]),
    dict(arxiv_id="sample-0003", title="ChemPrompt: Instruction-Tuned Language Models for Reaction Yield Prediction",
         research_background="Predicting the yield of a chemical reaction guides experiment planning. Graph neural networks need "
         "large labeled sets; language models pretrained on chemistry text have not been instruction-tuned for yield regression.",
         method="ChemPrompt fine-tunes a 1B-parameter chemistry language model. (1) Reactions are written as SMILES with reagent "
         "roles marked by special tokens. (2) Instruction tuning mixes yield regression with auxiliary tasks (reagent role "
         "classification and condition recommendation). (3) A numeric head predicts the yield from the final hidden state instead of "
         "decoding digits.",
         setup="Data: Buchwald-Hartwig (3,955 reactions) and Suzuki-Miyaura (5,760) high-throughput sets with the standard 70/30 "
         "random splits, ten repetitions. Baselines: Yield-BERT and a message-passing GNN. Metric: R^2 on the test split.",
         results="ChemPrompt reaches R^2 0.96 on Buchwald-Hartwig (Yield-BERT 0.95, GNN 0.93) and 0.84 on Suzuki-Miyaura "
         "(0.81, 0.79).",
         ablations=[
            dict(module_name="Auxiliary instruction tasks",
                 research_objective="Quantify the contribution of the auxiliary role-classification and condition-recommendation tasks to yield prediction.",
                 experiment_setup="Fine-tune with the yield regression task only and with the full task mixture on both datasets, ten "
                 "random splits each, reporting mean and standard deviation of R^2.",
                 results="Without auxiliary tasks R^2 drops to 0.94 and 0.80."),
            dict(module_name="Numeric regression head",
                 research_objective="Compare predicting yields with a numeric head against decoding the yield as digit tokens.",
                 experiment_setup="Train a variant that generates the yield as text digits with the same data and budget; evaluate "
                 "R^2 on both datasets over ten splits and count unparsable outputs.",
                 results="Digit decoding lowers R^2 by 0.03-0.05 and produces 1.2% unparsable outputs."),
         ]),
    dict(arxiv_id="sample-0004", title="Self-Check Decoding for Multilingual Question Answering",
         research_background="Multilingual question answering models answer confidently in low-resource languages even when wrong. "
         "Abstaining when uncertain improves reliability, but calibration methods are usually tuned on English only.",
         method="Self-Check Decoding (SCD) samples five answers from the model, translates each back to English with the same model, "
         "and measures agreement among the back-translated answers. (1) An agreement score is the share of samples matching the "
         "majority answer. (2) The model abstains when agreement is below a per-language threshold tuned on a development set. "
         "(3) Back-translation normalizes surface variation across scripts before matching.",
         setup="Benchmarks: TyDi QA and MKQA covering 18 languages. Base model: a 7B multilingual instruction model. Baselines: "
         "token-probability thresholding and verbalized confidence. Metrics: accuracy on answered questions, coverage, and AUROC of "
         "the confidence score.",
         results="At 80% coverage SCD raises answered-question accuracy from 61.2% to 68.9% on TyDi QA and AUROC from 0.66 to 0.77; "
         "gains are largest in the six lowest-resource languages.",
         ablations=[
            dict(module_name="Back-translation normalization",
                 research_objective="Test whether back-translating sampled answers to English before matching improves the agreement signal.",
                 experiment_setup="Compute agreement directly on answers in the original language (string match after lowercasing) "
                 "versus after back-translation; compare AUROC and accuracy at 80% coverage per language on TyDi QA and MKQA.",
                 results="Without back-translation AUROC falls to 0.71, mostly in non-Latin scripts."),
            dict(module_name="Per-language thresholds",
                 research_objective="Evaluate whether tuning abstention thresholds per language beats a single global threshold.",
                 experiment_setup="Tune one global threshold on the pooled development set and compare with per-language thresholds, "
                 "reporting accuracy at matched overall coverage for each language.",
                 results="A global threshold reduces accuracy by 2.7 points on low-resource languages and 0.4 on high-resource ones."),
         ]),
]

# Four invented "systems" with intended quality levels; responses are built from the reference.
def responses(ctx, ab):
    obj, proc, mod = ab["research_objective"], ab["experiment_setup"], ab["module_name"]
    return {
        "expert-style": (f"Research Objective: {obj}\nExperiment Process: {proc} Additionally, report variance over three seeds "
                         "and keep the training budget identical across groups.", (5, 5, 5)),
        "partial": (f"Research Objective: Study the effect of the {mod.lower()}.\nExperiment Process: Remove the {mod.lower()} and "
                    f"retrain the model. Compare with the full model using the main metric.", (4, 4, 3)),
        "off-context": (f"Research Objective: Show that the {mod.lower()} is important.\nExperiment Process: Replace the whole method "
                        "with a larger pretrained model on a new benchmark, evaluating human preference ratings.", (2, 1, 3)),
        "vague": ("Research Objective: Ablate things.\nExperiment Process: We try several variants and see what happens.", (1, 3, 1)),
    }

def main():
    examples, human = [], []
    k = 0
    for ci, c in enumerate(CONTEXTS):
        for ai, ab in enumerate(c["ablations"]):
            k += 1
            ex = dict(example_id=f"abgen-sample-{k:03d}", arxiv_id=c["arxiv_id"], title=c["title"],
                      research_background=c["research_background"], method=c["method"],
                      main_experiment=dict(experiment_setup=c["setup"], results=c["results"]),
                      ablation_study=dict(module_name=ab["module_name"], research_objective=ab["research_objective"],
                                          experiment_setup=ab["experiment_setup"], results=ab["results"]))
            examples.append(ex)
            for si, (system, (text, scores)) in enumerate(responses(c, ab).items()):
                # fixed perturbation so that rows are not identical across examples (synthetic, not measured)
                pert = [((k * 7 + si * 3 + j * 5) % 5 == 0) * (-1 if s > 1 else 1) for j, s in enumerate(scores)]
                sc = [min(5, max(1, s + p)) for s, p in zip(scores, pert)]
                human.append(dict(ex, meta_id=f"{ex['example_id']}@{system}", model_response=text,
                                  importance=dict(score=sc[0], annotator="synthetic"),
                                  faithfulness=dict(score=sc[1], annotator="synthetic"),
                                  soundness=dict(score=sc[2], annotator="synthetic")))
    (HERE/"sample.jsonl").write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in examples))
    (HERE/"human_evaluation.json").write_text(json.dumps(human, indent=1, ensure_ascii=False) + "\n")
    print(len(examples), "examples,", len(human), "human-evaluation rows")

if __name__ == "__main__":
    main()
