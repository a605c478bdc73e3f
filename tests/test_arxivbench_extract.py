"ArxivBench extraction (issue 10): every link form models write, ids validated by era, titles. Each test fails on the pre-issue extractor."
import pytest

from scibench.benchmarks.arxivbench import method as ab

from scibench.benchmarks.arxivbench import index as ai
from scibench.benchmarks.arxivbench import extract as ax


def malformed_ids(text):
    "The malformed links a response lists."
    return [p.malformed for p in ax.extract_papers(text) if p.malformed]


def papers(text):
    return [(p.title, p.arxiv_id, getattr(p, "malformed", None)) for p in ab.extract_papers(text)]

def ids(text):
    return [p.arxiv_id for p in ab.extract_papers(text)]


# --------------------------------------------------------------------------- link forms
def test_bare_ids_inside_brackets():
    text = ("[[Attention Is All You Need]] [[1706.03762]]\n[[BERT]] [1810.04805v2]\n"
            "(Deep Residual Learning for Image Recognition) (1512.03385)\n[[Old]] [[hep-th/9711200v3]]")
    assert papers(text) == [("Attention Is All You Need", "1706.03762", None), ("BERT", "1810.04805", None),
                            ("Deep Residual Learning for Image Recognition", "1512.03385", None), ("Old", "hep-th/9711200", None)]

def test_doi_forms():
    text = ("1. [[GPT-4 Technical Report]] [[10.48550/arXiv.2303.08774]]\n"
            "2. [[Chain-of-Thought Prompting]] [[https://doi.org/10.48550/arXiv.2201.11903]]\n"
            "3. Proximal Policy Optimization Algorithms, doi:10.48550/ARXIV.1707.06347.")
    assert papers(text) == [("GPT-4 Technical Report", "2303.08774", None), ("Chain-of-Thought Prompting", "2201.11903", None),
                            ("Proximal Policy Optimization Algorithms", "1707.06347", None)]
    assert ai.normalize_id("https://dx.doi.org/10.48550/arXiv.1706.03762v2") == "1706.03762"

@pytest.mark.parametrize("url,want", [
    ("https://arxiv.org/abs/1810.04805", "1810.04805"), ("https://arxiv.org/abs/1810.04805v3", "1810.04805"),
    ("https://arxiv.org/pdf/1706.03762", "1706.03762"), ("https://arxiv.org/pdf/1706.03762v7.pdf", "1706.03762"),
    ("https://arxiv.org/html/2309.06180", "2309.06180"), ("https://arxiv.org/html/2309.06180v1", "2309.06180"),
    ("arxiv.org/html/2201.11903v6/", "2201.11903"),
])
def test_abs_pdf_html_urls_with_or_without_versions(url, want):
    assert papers(f"1. [[A paper]] [[{url}]]") == [("A paper", want, None)]

@pytest.mark.parametrize("url,want", [
    ("https://www.alphaxiv.org/abs/2303.08774", "2303.08774"), ("https://alphaxiv.org/overview/2303.08774v2", "2303.08774"),
    ("https://ar5iv.labs.arxiv.org/html/1512.03385", "1512.03385"), ("https://ar5iv.org/abs/1412.6980", "1412.6980"),
    ("https://www.semanticscholar.org/arxiv/1706.03762", "1706.03762"), ("https://api.semanticscholar.org/arXiv:1810.04805", "1810.04805"),
    ("https://huggingface.co/papers/2201.11903", "2201.11903"), ("https://www.arxiv-vanity.com/papers/1406.2661/", "1406.2661"),
])
def test_mirror_hosts_carrying_the_id(url, want):
    assert papers(f"- [[Some title]] [[{url}]]") == [("Some title", want, None)]

def test_mirror_pages_without_an_id_are_not_links():
    assert ab.extract_papers("See https://huggingface.co/papers/trending and https://www.semanticscholar.org/search?q=gan") == []

def test_trailing_punctuation_fragments_and_closing_brackets():
    text = ("1. Attention (https://arxiv.org/abs/1706.03762#S3).\n2. [[BERT]] [[https://arxiv.org/abs/1810.04805v2?context=cs]]\n"
            "3. ResNet <https://arxiv.org/pdf/1512.03385v1.pdf>;\n4. Adam: https://arxiv.org/abs/1412.6980/.\n"
            "5. GANs (arXiv:1406.2661v1)!")
    assert ids(text) == ["1706.03762", "1810.04805", "1512.03385", "1412.6980", "1406.2661"]
    assert malformed_ids(text) == []              # a fragment or query is not a malformed id

def test_old_style_with_subject_class_and_its_validity():
    text = ("- Some algebraic geometry: arXiv:math.AG/0601001v2\n- Strongly correlated: https://arxiv.org/abs/cond-mat.str-el/0501001\n"
            "- Not an archive: arXiv:foo.AG/0601001\n- Month 13: https://arxiv.org/abs/math.AG/0613001")
    assert papers(text) == [("Some algebraic geometry", "math/0601001", None), ("Strongly correlated", "cond-mat/0501001", None),
                            ("Not an archive", None, "foo.AG/0601001"), ("Month 13", None, "math.AG/0613001")]

@pytest.mark.parametrize("raw,valid", [
    ("0704.0001", True), ("1412.9999", True), ("1501.00001", True), ("2412.12345", True), ("hep-th/9108001", True), ("math/0703001", True),
    ("1706.0376", False),     # 4-digit sequence number after 1501
    ("1312.67890", False),    # 5-digit sequence number before 1501
    ("2013.12345", False), ("2100.12345", False),   # months 13 and 00
    ("0612.0001", False),     # new style before April 2007
    ("math/0704001", False),  # old style after March 2007
    ("math/9813001", False), ("1706.00000", False),
])
def test_ids_validated_by_era(raw, valid):
    assert (ai.normalize_id(raw) is not None) is valid
    [p] = ab.extract_papers(f"1. [[T]] [[https://arxiv.org/abs/{raw}]]")
    assert (p.arxiv_id is None, getattr(p, "malformed", None)) == ((False, None) if valid else (True, raw))

def test_invalid_id_is_never_looked_up():
    "A malformed link is a listed paper, verdict no without a lookup or a judge call."
    class Index:
        asked = []
        def get(self, x): self.asked.append(x); return None
        def find_title(self, t): return []
    items = [dict(prompt="p", papers=[p.to_dict() for p in ab.extract_papers("1. [[A]] [[https://arxiv.org/abs/1706.0376]]\n"
                                                                             "2. [[B]] [[https://arxiv.org/abs/1905.67890]]")])]
    ab.verify_and_judge(None, items, Index())
    assert Index.asked == ["1905.67890"]
    assert [(p["verdict"], p["verdict_source"]) for p in items[0]["papers"]] == [
        ("no", "malformed link (not an arXiv id)"), ("no", "fabricated id (not in snapshot)")]


# --------------------------------------------------------------------------- titles and what is a paper
def test_author_link_text_is_not_the_title():
    text = ("1. Attention Is All You Need — [Vaswani et al.](https://arxiv.org/abs/1706.03762)\n"
            "2. [Deep Residual Learning for Image Recognition](https://arxiv.org/abs/1512.03385) by [K. He](https://example.org/he)\n"
            "3. [Uncertainty and Variance](https://arxiv.org/abs/2013-1489675) by [Alexa Karpinski](https://arxiv.org/lrp/14/14), "
            "published in 2013, arXiv:1402.1481\n"
            "4. [[A. Vaswani, N. Shazeer]] [[https://arxiv.org/abs/1810.04805]]")
    assert papers(text) == [("Attention Is All You Need", "1706.03762", None), ("Deep Residual Learning for Image Recognition", "1512.03385", None),
                            ("Uncertainty and Variance", None, "2013-1489675"), ("", "1810.04805", None)]

def test_short_titles_are_kept():
    text = "[[GAN]] [[https://arxiv.org/abs/1406.2661]]\n[[VAE]] [[https://arxiv.org/abs/1312.6114]]\n[[PPO]] [[https://arxiv.org/abs/1707.06347]]"
    assert [p.title for p in ab.extract_papers(text)] == ["GAN", "VAE", "PPO"]
    assert [p.title for p in ab.extract_papers("1. [2023-08-24 15:29:17] https://arxiv.org/abs/1406.2661")] == [""]   # a date is no title

def test_arxiv_mention_in_a_description_is_not_another_paper():
    text = ("1. [[Attention Is All You Need]] [[https://arxiv.org/abs/1706.03762]]\n   It builds on the attention of arXiv:1409.0473.\n"
            "2. [[BERT]] [[https://arxiv.org/abs/1810.04805]] (compare arXiv:1802.05365)\n"
            "3. [[ResNet]] [[https://arxiv.org/abs/1512.03385]]\nThe residual idea was later extended (arXiv:1603.05027).")
    assert ids(text) == ["1706.03762", "1810.04805", "1512.03385"]
    # a list of mentions only is still a list of papers
    assert ids("- Maldacena (arXiv:hep-th/9711200)\n- Perelman (arXiv: math/0211159)") == ["hep-th/9711200", "math/0211159"]

def test_line_break_after_arxiv_colon_is_not_an_id():
    text = ("Sure, here are three relevant research papers hosted on arXiv:\n1. [[Attention Is All You Need]] [[https://arxiv.org/abs/1706.03762]]\n"
            "2. [[BERT]] [[https://arxiv.org/abs/1810.04805]]\n3. [[ResNet]] [[https://arxiv.org/abs/1512.03385]]")
    assert malformed_ids(text) == []
    assert ids(text) == ["1706.03762", "1810.04805", "1512.03385"]
    assert ab.classify(text, ab.extract_papers(text)) == "ok"

def test_malformed_links_are_listed_papers():
    "The shapes the embedded model wrote in the committed sample run: each is a listed, incorrect paper (not dropped)."
    text = ('1. [2019-08-31] "Theoretical and Numerical Methods for Ricci Flows" by Yann LeCun et al., arXiv:19140567v1\n'
            "2. [https://arxiv.org/abs/-2408937](https://www.quantam.example/papers/x)\n3. [[Holography]] [[https://arxiv.org/abs/2008.049376]]")
    assert papers(text) == [("Theoretical and Numerical Methods for Ricci Flows", None, "19140567v1"), ("", None, "-2408937"),
                            ("Holography", None, "2008.049376")]
    assert ab.classify(text, ab.extract_papers(text)) == "ok"    # three papers listed, all three incorrect
