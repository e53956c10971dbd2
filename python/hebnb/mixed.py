"""Mixed Naive Bayes: categorical, count, binary and continuous columns in one model."""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from sklearn.utils._indexing import _get_column_indices, _safe_indexing
from sklearn.utils.validation import check_array

from ._base import check_class_prior, class_log_prior, validate_table
from ._encoding import (
    check_sample_weight,
    encode_labels,
    refuse_non_table,
    rows_as_array,
    stream_as_table,
)
from ._online import batch_classes, n_rows_of
from ._params import ClassProbabilities, meta_fit_context
from ._text import FloatArray, NaiveBayesClassifier, check_finite_labels
from .gaussian import GaussianNB
from .multinomial import ComplementNB
from .naive_bayes import CategoricalNB

Part = tuple[str, Any, list[int]]


def is_continuous(column: pd.Series) -> bool:
    """A float column, or an object column holding floats; not a column with no value
    at all (nothing to model: the categorical model skips it, GaussianNB would refuse
    its NaN)."""
    if column.isna().all():
        return False
    if _is_float_dtype(column.dtype):
        return True
    if column.dtype == object:
        return pd.api.types.infer_dtype(column, skipna=True) in ("floating", "mixed-integer-float")
    return False


def _is_float_dtype(dtype: Any) -> bool:
    """``pd.api.types.is_float_dtype``, which raises NotImplementedError for some Arrow
    types pandas has no numpy counterpart of (``string_view``): those are asked of the
    Arrow type."""
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow

        return bool(pyarrow.types.is_floating(dtype.pyarrow_dtype))
    return bool(pd.api.types.is_float_dtype(dtype))


def default_models(X: Any) -> list[tuple[str, BaseEstimator, list[int]]]:
    """The automatic split: float columns -> :class:`GaussianNB`, every other column
    (integers, strings, booleans, categories, objects) -> :class:`CategoricalNB`. ``X``
    has passed :func:`check_table` (void and structured columns refused)."""
    if isinstance(X, pd.DataFrame):
        frame = X
    else:
        array = np.asarray(X)
        # object and string columns stay objects: pandas would infer its string dtype
        # from them (through pyarrow, which fails on a lone surrogate), for the same split
        text = array.dtype.kind in "OUST"
        frame = pd.DataFrame(array, dtype=object if text else None)
    # decided from the dtypes, the float columns' emptiness in one pass: a Series per
    # column cost about 0.1 ms each (1.6 s of a 20,000-column fit)
    dtypes = list(frame.dtypes)
    is_float = [_is_float_dtype(dtype) for dtype in dtypes]
    floating = [j for j, f in enumerate(is_float) if f]
    if floating:
        empty = frame.iloc[:, floating].isna().all(axis=0).to_numpy()
        for j, nothing in zip(floating, empty):
            is_float[j] = not nothing
    for j in (j for j, dtype in enumerate(dtypes) if dtype == object):
        column = frame.iloc[:, j]
        is_float[j] = is_continuous(column)
        if frame is not X and not is_float[j]:
            # CategoricalNB refuses it too, but numbered within its group of columns
            _refuse_invalid_text(column, j)
    floats = [j for j, f in enumerate(is_float) if f]
    others = [j for j, f in enumerate(is_float) if not f]
    models: list[tuple[str, BaseEstimator, list[int]]] = []
    if others:
        categorical: Any = CategoricalNB
        models.append(("categorical", categorical(), others))
    if floats:
        models.append(("gaussian", GaussianNB(), floats))
    return models


def _refuse_records(dtype: Any, column: str) -> None:
    """Refuses a numpy void or structured dtype (raw bytes, or a record of fields), which
    pandas cannot hold as one column ("Data must be 1-dimensional", or ``isnan`` failing
    on it)."""
    if isinstance(dtype, np.dtype) and dtype.kind == "V":
        raise ValueError(
            f"{column} has unsupported dtype {dtype} (raw bytes or a record of fields), "
            "which is neither categorical nor continuous: give a structured array's fields "
            "as columns of their own"
        )


def _refuse_invalid_text(column: pd.Series, j: int) -> None:
    """Refuses an object column holding a string that is not valid Unicode (a lone
    surrogate, which UTF-8 cannot encode), naming column ``j`` of ``X``."""
    strings = [value for value in column.tolist() if isinstance(value, str)]
    try:
        "".join(strings).encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"column {j} holds a string that is not valid Unicode (a lone surrogate such as "
            f"{error.object[error.start]!r}): categories must be encodable as UTF-8"
        ) from None


def _nullable_dtype(arrow_type: Any) -> Any:
    """pandas' nullable dtype of an Arrow integer or boolean column (None otherwise: the
    default conversion). By default pandas makes such a column with a null float64, which
    would send it to :class:`GaussianNB`."""
    import pyarrow as pa

    if pa.types.is_boolean(arrow_type):
        return pd.BooleanDtype()
    if pa.types.is_integer(arrow_type):
        bits = arrow_type.bit_width
        return pd.api.types.pandas_dtype(
            f"UInt{bits}" if pa.types.is_unsigned_integer(arrow_type) else f"Int{bits}"
        )
    return None


def check_table(X: Any) -> Any:
    """A DataFrame as it is, a polars DataFrame or pyarrow Table as a pandas DataFrame
    (its column names kept: recorded, checked at predict, and selectable by name),
    anything else as a 2-D array (any dtype, missing values allowed: the group models
    check their own columns); sparse input is refused, and so are columns of a numpy
    void or structured dtype and polars ``Object`` columns (which Arrow holds as the
    objects' addresses)."""
    refuse_non_table(X)
    X = stream_as_table(X)
    module = type(X).__module__.partition(".")[0]
    if module in ("polars", "pyarrow") and hasattr(X, "to_pandas") and hasattr(X, "columns"):
        if module == "polars":
            for name, dtype in X.schema.items():
                if dtype.base_type().__name__ == "Object":
                    raise TypeError(
                        f"column {name!r} has polars type Object, which MixedNB cannot "
                        "read: pass X.to_pandas() (a pandas object column of its Python "
                        "objects), or cast the column"
                    )
        table = X.to_arrow() if module == "polars" else X
        X = table.to_pandas(types_mapper=_nullable_dtype)
        for name, field in zip(X.columns, table.schema, strict=True):
            if isinstance(X[name].dtype, pd.CategoricalDtype) and str(field.type).startswith(
                "dictionary"
            ):
                # an Arrow dictionary declares nothing (only the values in the rows count,
                # as CategoricalNB reads it); a pandas category column declares its
                # categories: keep only those the rows use
                X[name] = X[name].cat.remove_unused_categories()
    if sp.issparse(X):
        raise TypeError(
            "MixedNB does not support sparse input: pass a DataFrame or a dense array "
            "(sparse token counts go to MultinomialNB or BernoulliNB directly)"
        )
    if isinstance(X, pd.DataFrame):
        if X.shape[1] == 0:
            raise ValueError(
                f"0 feature(s) (shape={X.shape}) while a minimum of 1 is required by MixedNB."
            )
        for label, dtype in zip(X.columns, X.dtypes, strict=True):
            _refuse_records(dtype, f"column {label!r}")
        return X
    # rows mixing numbers and strings (or booleans and numbers) keep each value's own
    # type, so that float columns still go to GaussianNB and True stays a boolean
    array = check_array(rows_as_array(X), dtype=None, ensure_all_finite=False)
    _refuse_records(array.dtype, "column 0")
    return array


def _common_learning_rate(parts: list[Part]) -> float:
    """The forgetting factor every group of a stream shares (1 for a group that does not
    forget); ValueError naming the groups when they differ."""
    rates = {
        name: float(estimator.get_params().get("learning_rate", 1.0))
        for name, estimator, _ in parts
    }
    if len(set(rates.values())) > 1:
        raise ValueError(
            "MixedNB.partial_fit needs every group to forget at one rate (its class prior "
            f"ages with them; GaussianNB, MultinomialNB and BernoulliNB never forget), "
            f"got learning_rate {rates}"
        )
    return next(iter(rates.values()))


class MixedNB(NaiveBayesClassifier):
    """Naive Bayes over columns of different kinds: each group of columns is modelled by
    its own Naive Bayes model, and the per-group log-likelihoods are summed with one
    class prior::

        ln P(c, x) = ln pi_c + sum over groups g of ln P(x_g | c)

    where ``ln P(x_g | c)`` is the group model's joint log-likelihood minus its own class
    prior (for a :class:`MultinomialNB` group, its tempered likelihood
    ``tau sum_v x_v ln theta_cv``: its joint less ``tau`` times its prior). So the model
    equals the sum of its parts fitted separately. The group models
    are fitted with a uniform class prior (their ``fit_prior`` and ``class_prior`` are
    set so), which makes that difference exact.

    Parameters
    ----------
    models : list of (name, estimator, columns) or None, default=None
        As ``ColumnTransformer``'s transformers: ``estimator`` a hebnb model with a class
        prior (:class:`CategoricalNB`, :class:`MultinomialNB`, :class:`BernoulliNB`,
        :class:`GaussianNB`), ``columns`` a column name, index, list,
        slice, boolean mask or callable (``sklearn.compose.make_column_selector``).
        Columns no group selects are ignored; a column selected twice is an error. None:
        float columns -> ``GaussianNB()``, all others -> ``CategoricalNB()`` (a column
        with no value at all included: it is skipped there). ``GaussianNB`` refuses
        missing values, so a float column with some must be imputed, or binned and given
        to ``CategoricalNB``.
    fit_prior : bool, default=True
        Learn the class prior ((N_c + 1) / (S + C), as :class:`CategoricalNB`); if False,
        uniform.
    class_prior : array-like of shape (n_classes,), default=None
        Prior probabilities of the classes; overrides ``fit_prior``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_count_ : ndarray of shape (n_classes,)
    class_log_prior_ : ndarray of shape (n_classes,)
    models_ : list of (name, fitted estimator, column indices)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from hebnb import MixedNB
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame({"colour": rng.choice(["red", "blue"], 100),
    ...                   "size": rng.normal(size=100)})
    >>> y = (X["size"] > 0).astype(int)
    >>> model = MixedNB().fit(X, y)
    >>> [(name, columns) for name, _, columns in model.models_]
    [('categorical', [0]), ('gaussian', [1])]
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "models": [list, None],
        "fit_prior": ["boolean"],
        "class_prior": [ClassProbabilities(), None],
    }

    def __init__(
        self, *, models: list[Any] | None = None, fit_prior: bool = True, class_prior: Any = None
    ) -> None:
        self.models = models
        self.fit_prior = fit_prior
        self.class_prior = class_prior

    def _named_models(self) -> list[tuple[str, Any]]:
        """``(name, estimator)`` of the well-formed entries of ``models`` (checked at fit)."""
        if not isinstance(self.models, (list, tuple)):
            return []
        return [
            (spec[0], spec[1])
            for spec in self.models
            if isinstance(spec, tuple) and len(spec) == 3 and isinstance(spec[0], str)
        ]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters, and with ``deep`` each group model by its name and its own
        parameters as ``name__parameter``, as ``ColumnTransformer`` gives its transformers'
        (so that a search can tune a group's model)."""
        params: dict[str, Any] = super().get_params(deep=False)
        if deep:
            for name, estimator in self._named_models():
                params[name] = estimator
                if hasattr(estimator, "get_params"):
                    for key, value in estimator.get_params(deep=True).items():
                        params[f"{name}__{key}"] = value
        return params

    def _get_params_html(self, deep: bool = True, doc_link: str = "") -> Any:
        """The parameter table of scikit-learn's HTML display (scikit-learn >= 1.7):
        MixedNB's own parameters. With the group models' ``name__parameter`` keys, which
        are not arguments of ``__init__``, every one of them was marked as set by the
        user."""
        return super()._get_params_html(deep=False, doc_link=doc_link)

    def set_params(self, **params: Any) -> MixedNB:
        """Sets parameters; ``name`` replaces that group's model in ``models`` and
        ``name__parameter`` sets a parameter of it, as in ``ColumnTransformer``."""
        names = {name for name, _ in self._named_models()}
        replaced = {key: params.pop(key) for key in list(params) if key in names}
        if replaced:
            self.models = [
                (spec[0], replaced[spec[0]], spec[2])
                if isinstance(spec, tuple) and len(spec) == 3 and spec[0] in replaced
                else spec
                for spec in self.models  # type: ignore[union-attr]
            ]
        super().set_params(**params)
        return self

    def _resolve(self, X: Any) -> list[Part]:
        specs = default_models(X) if self.models is None else self.models
        for spec in specs:
            if not (isinstance(spec, tuple) and len(spec) == 3 and isinstance(spec[0], str)):
                raise ValueError(
                    f"each entry of models must be a (name, estimator, columns) tuple, got {spec!r}"
                )
        self._check_names([spec[0] for spec in specs])
        parts: list[Part] = []
        taken: dict[int, str] = {}
        for name, estimator, columns in specs:
            if isinstance(estimator, ComplementNB) or not hasattr(
                estimator, "predict_joint_log_proba"
            ):
                raise TypeError(
                    f"model {name!r}: {type(estimator).__name__} has no class-conditional "
                    "log-likelihood to sum (use CategoricalNB, MultinomialNB, BernoulliNB, "
                    "or GaussianNB)"
                )
            key = columns(X) if callable(columns) else columns
            indices = [int(j) for j in _get_column_indices(X, key)]
            for j in indices:
                if j in taken:
                    raise ValueError(
                        f"column {j} is selected by both {taken[j]!r} and {name!r}: each column "
                        "may belong to one model only"
                    )
                taken[j] = name
            if indices:
                # a uniform prior in every group: its log-likelihood is then its joint
                # log-probability plus a constant, even for a class of zero weight
                part = clone(estimator).set_params(fit_prior=False, class_prior=None)
                parts.append((name, part, indices))
        if not parts:
            raise ValueError("MixedNB has no columns to model: every model selects no column")
        return parts

    def _stream_parts(self, X: Any) -> list[Part]:
        """The stream's group models, given the groups' parameters set since the last
        batch (``set_params(name__param=...)``, as an estimator's own parameters apply to
        its next ``partial_fit``). A change of the groups themselves (their names, model
        types or columns) is refused: the stream's counts belong to the groups it began
        with. With ``models=None`` the groups are those of the first batch."""
        if self.models is None:
            return self.models_
        wanted = self._resolve(X)
        if [(n, type(e), c) for n, e, c in wanted] != [(n, type(e), c) for n, e, c in self.models_]:
            raise ValueError(
                "MixedNB's groups (names, model types or columns) differ from those the "
                "stream began with: call fit to start a new one"
            )
        for (_, template, _), (_, part, _) in zip(wanted, self.models_):
            part.set_params(**template.get_params(deep=False))
        return self.models_

    def _check_names(self, names: list[str]) -> None:
        """The group names address the groups' parameters (``name__param``), as
        ``ColumnTransformer``'s do: unique, without ``__``, and not a parameter of
        MixedNB (``get_params`` and ``set_params`` would reach the wrong object)."""
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"model names must be unique: {repeated!r} repeat")
        clashing = sorted(set(names) & set(self.get_params(deep=False)))
        if clashing:
            raise ValueError(f"model names {clashing!r} are parameters of MixedNB: rename them")
        nested = [name for name in names if "__" in name]
        if nested:
            raise ValueError(f"model names must not contain '__': got {nested!r}")

    #: ``partial_fit`` updates the groups' models in place
    _changed_in_place = ("models_",)

    @meta_fit_context
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> MixedNB:
        """Fits every group's model on its columns and the class prior.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Passed to every group's model.

        Returns
        -------
        self
        """
        X = check_table(X)
        check_finite_labels(y)
        validate_table(self, X, skip_check_array=True, reset=True)
        n_rows = n_rows_of(X)
        classes, labels = encode_labels(y, n_rows)
        check_class_prior(self.class_prior, classes.shape[0])
        weights = check_sample_weight(sample_weight, n_rows)
        parts = self._resolve(X)
        for _, estimator, columns in parts:
            estimator.fit(_safe_indexing(X, columns, axis=1), y, sample_weight=sample_weight)
        self._finish(
            parts,
            classes,
            np.bincount(labels, weights, minlength=classes.shape[0]).astype(np.float64),
        )
        return self

    @meta_fit_context
    def partial_fit(
        self, X: Any, y: Any, classes: Any = None, sample_weight: Any = None
    ) -> MixedNB:
        """Passes a batch to every group's ``partial_fit``.

        Groups that forget (``CategoricalNB(learning_rate=gamma)``) are allowed when every
        group forgets at the same rate: the class counts then age as theirs do (multiplied
        by ``gamma ** n`` before a batch of n rows), so the model stays the sum of its
        parts. Groups that forget at different rates, or a group that forgets beside one
        that cannot (GaussianNB, MultinomialNB, BernoulliNB), are refused: no one class
        prior fits both.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), default=None
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self
        """
        first_call = not hasattr(self, "models_")
        if not first_call:  # fit_context checks only the first call; set_params may not
            self._validate_params()
        X = check_table(X)
        check_finite_labels(y)
        validate_table(self, X, skip_check_array=True, reset=first_call)
        n_rows = n_rows_of(X)
        declared, labels = batch_classes(y, n_rows, classes, None if first_call else self.classes_)
        check_class_prior(self.class_prior, declared.shape[0])
        weights = check_sample_weight(sample_weight, n_rows)
        parts = self._resolve(X) if first_call else self._stream_parts(X)
        learning_rate = _common_learning_rate(parts)
        for _, estimator, columns in parts:
            estimator.partial_fit(
                _safe_indexing(X, columns, axis=1), y, classes=declared, sample_weight=sample_weight
            )
        class_count = np.bincount(labels, weights, minlength=declared.shape[0]).astype(np.float64)
        if not first_call:
            # the stored class counts age one step per new row, as the groups' counts do
            class_count += learning_rate**n_rows * self.class_count_
        self._finish(parts, declared, class_count)
        return self

    def _finish(self, parts: list[Part], classes: Any, class_count: FloatArray) -> None:
        for name, estimator, _ in parts:
            if not np.array_equal(estimator.classes_, classes):
                raise ValueError(f"model {name!r} learned other classes than MixedNB")
        self.models_ = parts
        self.classes_ = classes
        self.class_count_ = class_count
        self.class_log_prior_ = class_log_prior(
            class_count, fit_prior=self.fit_prior, class_prior=self.class_prior
        )

    def _joint_log_likelihood(self, X: Any) -> FloatArray:
        X = check_table(X)
        validate_table(self, X, skip_check_array=True, reset=False)
        joint = np.tile(self.class_log_prior_, (n_rows_of(X), 1))
        for _, estimator, columns in self.models_:
            with warnings.catch_warnings():
                # the table's names were checked (and any warning given) once, above
                warnings.filterwarnings(
                    "ignore", message="X (does not have valid|has) feature names"
                )
                part = estimator.predict_joint_log_proba(_safe_indexing(X, columns, axis=1))
            # a tempered part's joint holds its prior raised to its power too
            power = getattr(estimator, "posterior_power_", 1.0)
            joint += part - power * estimator.class_log_prior_
        return joint

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.classifier_tags.poor_score = True
        return tags
