/*
 * test_tokenizer_model.c -- sh_tokenizer_model, the model of libxml2
 * 2.9.14's HTML tokenizer, on its own: where the input may be cut for the
 * parser (never inside a construct, in the parser's eyes or in its
 * look-ahead's, nor inside a character), the question it asks about an end
 * tag in script text, the spans of script and style text it hands over,
 * and a construct too large.  What the budget makes of its charges is
 * test_budget.c's.
 */
#include "test_util.h"

#include "sh_tokenizer_model.h"

/* The model, fresh, after scanning `html` in one call: how much it took. */
static size_t
scan(sh_tokenizer_model_t *b, const char *html)
{
    sh_tokenizer_model_init(b);
    return sh_tokenizer_model_scan(b, html, strlen(html));
}

/*
 * The last cut point is the end of the last construct complete so far:
 * not inside a tag whose '>' has not come, nor in a comment until its
 * "-->" (a '>' inside does not end it), nor after a quote that the push
 * parser's look-ahead takes for a value that never closes, nor inside a
 * character.
 */
static void
test_cut_points(void **state)
{
    sh_tokenizer_model_t b;

    assert_int_equal(scan(&b, "<p>one</p><p title=\"a"), 21);
    assert_int_equal(b.safe_first, 0);
    assert_int_equal(b.safe_last, strlen("<p>one</p>"));

    scan(&b, "<p>one<!-- x > y -->two");
    assert_int_equal(b.safe_last, strlen("<p>one<!-- x > y -->two"));
    scan(&b, "<p>one<!-- x > y");
    assert_int_equal(b.safe_last, strlen("<p>one"));

    scan(&b, "<p>one<m\" n=\">d two</p>three");
    assert_int_equal(b.safe_last, strlen("<p>one"));

    assert_int_equal(scan(&b, "<p>one</p>\xc3"), 11);
    assert_int_equal(b.safe_last, 10);
    assert_int_equal(b.budget.verdict, SH_BUDGET_OK);
}

/*
 * "</div>" in script text ends the script only if a div is open below it,
 * which only the parser knows: the model stops after the end tag and
 * asks (b->sync), and goes on as the answer says.
 */
static void
assert_end_tag_asks(const char *element, int still_raw)
{
    static const char    page[] = "<div><script>var a;</div>seen</script>";
    sh_tokenizer_model_t b;
    size_t               off, n;

    off = scan(&b, page);
    assert_int_equal(off, strlen("<div><script>"));
    assert_string_equal(sh_tokenizer_model_raw_element(&b), "script");
    off += sh_tokenizer_model_scan(&b, page + off, strlen(page + off));
    assert_int_equal(off, strlen("<div><script>var a;"));
    assert_true(b.raw_text);
    assert_false(b.sync);

    n = sh_tokenizer_model_scan(&b, page + off, strlen(page + off));
    assert_int_equal(n, strlen("</div>"));
    assert_true(b.sync);
    /* asked, it takes nothing more until answered */
    assert_int_equal(sh_tokenizer_model_scan(&b, page + off + n,
                                             strlen(page + off + n)), 0);
    off += n;
    sh_tokenizer_model_sync(&b, element);
    assert_false(b.sync);
    if (still_raw) {
        assert_string_equal(sh_tokenizer_model_raw_element(&b), "script");
        n = sh_tokenizer_model_scan(&b, page + off, strlen(page + off));
        assert_int_equal(n, strlen("seen"));
        assert_true(b.raw_text);
    } else {
        assert_null(sh_tokenizer_model_raw_element(&b));
        n = sh_tokenizer_model_scan(&b, page + off, strlen(page + off));
        assert_int_equal(n, strlen("seen</script>"));
        assert_false(b.raw_text);
    }
}

static void
test_end_tag_in_script_asks(void **state)
{
    assert_end_tag_asks("div", 0);      /* the div closed the script */
    assert_end_tag_asks("script", 1);   /* the parser is still in it */
}

/* Scan `html` from where `b` is: the bytes of the next span, and its
 * raw_text flag. */
static size_t
span(sh_tokenizer_model_t *b, const char *html, size_t *off, int *raw)
{
    size_t n = sh_tokenizer_model_scan(b, html + *off, strlen(html + *off));

    *off += n;
    *raw = b->raw_text;
    return n;
}

/*
 * The scanner hands script and style text over in spans of their own, up
 * to the "</" and letter that ends htmlParseScript's run; a '<' that is
 * not one stays inside.  A span with a character libxml2 reports as
 * invalid is not spared (its errors are charged), and an incomplete
 * character at the end of the input stays out of it.
 */
static void
test_script_text_spans(void **state)
{
    static const char page[] =
        "<p>a<script>if (a<b) s = \"</ \";</script><style>\x01x</style>"
        "<script>\xef\xbf\xbe</script><script>\xc3";
    sh_tokenizer_model_t b;
    size_t               off = 0, n;
    int                  raw;

    sh_tokenizer_model_init(&b);
    n = span(&b, page, &off, &raw);
    assert_int_equal(n, strlen("<p>a<script>"));
    assert_false(raw);
    n = span(&b, page, &off, &raw);
    assert_int_equal(n, strlen("if (a<b) s = \"</ \";"));
    assert_true(raw);
    assert_int_equal(b.safe_last, n);
    n = span(&b, page, &off, &raw);
    assert_int_equal(n, strlen("</script><style>"));
    assert_false(raw);
    n = span(&b, page, &off, &raw);
    assert_int_equal(n, 2);             /* \x01x: a C0 control */
    assert_false(raw);
    span(&b, page, &off, &raw);         /* </style><script> */
    n = span(&b, page, &off, &raw);
    assert_int_equal(n, 3);             /* U+FFFE */
    assert_false(raw);
    span(&b, page, &off, &raw);         /* </script><script> */
    n = span(&b, page, &off, &raw);
    assert_int_equal(n, 1);             /* \xc3: taken, not spared */
    assert_false(raw);
    assert_int_equal(b.safe_last, 0);
    assert_int_equal(off, strlen(page));
}

/* A comment longer than SH_PENDING_MAX: the page is too large, and the
 * input may be cut only before the comment. */
static void
test_construct_too_large(void **state)
{
    size_t               len = SH_PENDING_MAX + 1024;
    char                *page = malloc(len + 1);
    sh_tokenizer_model_t b;

    assert_non_null(page);
    memset(page, 'x', len);
    memcpy(page, "<p>a<!--", 8);
    page[len] = '\0';
    scan(&b, page);
    assert_int_equal(b.budget.verdict, SH_BUDGET_TOO_LARGE);
    assert_int_equal(b.budget.why, SH_BUDGET_WHY_RUN);
    assert_int_equal(b.safe_last, strlen("<p>a"));
    free(page);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cut_points),
        cmocka_unit_test(test_end_tag_in_script_asks),
        cmocka_unit_test(test_script_text_spans),
        cmocka_unit_test(test_construct_too_large),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
